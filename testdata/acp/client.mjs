// Drives `agentauth serve --stdio` with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, pinned in package-lock.json) as the client:
// initialize (typed authMethods, auth.logout capability, agentInfo, version
// negotiation), authenticate by methodId without and with a token, a gated
// call before and after, and logout. Prints one line per check and exits 1
// on the first failure.
//
//   node client.mjs AGENTAUTH_BINARY CONFIG_JSON TOKEN
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, config, token] = process.argv.slice(2);
const child = spawn(bin, ["serve", "--stdio", "--config", config], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const conn = acp.client().connect(stream);
const agent = conn.agent;

function check(name, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ": " + detail : ""}`);
  if (!ok) {
    child.kill();
    process.exit(1);
  }
}
async function refusal(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return e;
  }
}

const init = await agent.request("initialize", {
  protocolVersion: 99,
  clientCapabilities: {},
  clientInfo: { name: "acp-sdk-conformance", version: "1" },
});
check("initialize answers the agent's latest version", init.protocolVersion === acp.PROTOCOL_VERSION, JSON.stringify(init.protocolVersion));
check("agentInfo", init.agentInfo?.name === "agentauth", JSON.stringify(init.agentInfo));
check("auth.logout capability", JSON.stringify(init.agentCapabilities?.auth?.logout) === "{}", JSON.stringify(init.agentCapabilities));
const method = init.authMethods?.[0];
check("an agent-type auth method", method?.id === "dev" && (method.type ?? "agent") === "agent", JSON.stringify(init.authMethods));

let err = await refusal(agent.request("whoami", {}));
check("a gated call before authenticate is AuthRequired (-32000)", err?.code === -32000, err?.message);
err = await refusal(agent.request("authenticate", { methodId: "dev" }));
check("authenticate {methodId} without a credential is -32000", err?.code === -32000, err?.message);
const ok = await agent.request("authenticate", { methodId: "dev", _meta: { "agentauth.dev/token": token } });
check("authenticate {methodId, _meta token} answers {}", JSON.stringify(ok ?? {}) === "{}", JSON.stringify(ok));
const who = await agent.request("whoami", {});
check("the gated call runs", who?.schemes?.[0]?.subject === "alice", JSON.stringify(who));
const out = await agent.request("logout", {});
check("logout answers {}", JSON.stringify(out ?? {}) === "{}", JSON.stringify(out));
err = await refusal(agent.request("whoami", {}));
check("after logout the gated call is -32000 again", err?.code === -32000, err?.message);

conn.close();
child.kill();
process.exit(0);
