// An ACP agent built with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, pinned in package-lock.json), served on
// stdin/stdout for agentauth's client (run.sh): it advertises one auth
// method of each type (agent, env_var, terminal), answers getAuthState
// (seed 003) and authenticate {methodId}: the agent-type method "oauth"
// succeeds, any other is AuthRequired (-32000).
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let authenticated = false;
const app = acp
  .agent()
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { auth: { logout: {} }, getAuthState: true },
    agentInfo: { name: "sdk-agent", version: "1.0.0" },
    authMethods: [
      { id: "oauth", name: "Sign in", description: "OAuth in the agent", type: "agent" },
      { id: "api-key", name: "API key", type: "env_var", varName: "SDK_AGENT_API_KEY", link: "https://example.com/keys" },
      { id: "login", name: "Terminal login", type: "terminal", args: ["--login"], env: { SDK_AGENT_MODE: "login" } },
    ],
  }))
  .onRequest("authenticate", ({ params }) => {
    if (params.methodId !== "oauth") {
      throw new acp.RequestError(-32000, `Authentication required: method ${params.methodId} is not run by the agent`);
    }
    authenticated = true;
    return {};
  })
  .onRequest("logout", () => {
    authenticated = false;
    return {};
  })
  .onRequest("getAuthState", (p) => p, () => ({
    authenticated,
    authMethods: [{ authMethodId: "oauth", authenticated, message: authenticated ? "signed in" : "not signed in" }],
  }));
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
