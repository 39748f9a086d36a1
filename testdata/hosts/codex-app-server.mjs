// A client of `codex app-server` (JSON-RPC 2.0, one JSON object a line on
// stdin and stdout) as an IDE drives it: initialize; with --login, the MCP
// server's OAuth (mcpServer/oauth/login: the authorization URL is given to
// $BROWSER, then mcpServer/oauthLogin/completed); a thread
// (thread/start); the server's status and tools (mcpServerStatus/list); a
// tool call without the model (mcpServer/tool/call); and a turn whose
// model asks for the tool (turn/start, until turn/completed). It prints
// one line per step on stdout:
//   login: success=true|false …        (with --login)
//   status: AUTH tools=NAME,NAME
//   direct call: {…the tool's result…}
//   turn item: mcpToolCall SERVER/TOOL STATUS {…result…}
//   turn: STATUS agent: TEXT
// and exits 1 on an error. Server requests (approvals, elicitations) are
// printed and declined. Usage:
//   node codex-app-server.mjs [--login] SERVER TOOL -- COMMAND [ARG…]
import { spawn } from "node:child_process";
import readline from "node:readline";

const argv = process.argv.slice(2);
const login = argv[0] === "--login";
if (login) argv.shift();
const [server, tool, dashes, command, ...args] = argv;
if (dashes !== "--" || !command) {
  console.error("usage: node codex-app-server.mjs [--login] SERVER TOOL -- COMMAND [ARG…]");
  process.exit(2);
}

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
child.on("exit", (code) => fail(`app-server exited (${code})`));
const pending = new Map();
const waiters = [];
let nextId = 1;

function fail(message) {
  console.error(`codex-app-server: ${message}`);
  process.exit(1);
}
function send(message) {
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}
// notification resolves with the params of the first METHOD notification
// for which match returns true.
function notification(method, match = () => true) {
  return new Promise((resolve) => waiters.push({ method, match, resolve }));
}

readline.createInterface({ input: child.stdout }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return fail(`not JSON on stdout: ${line.slice(0, 200)}`);
  }
  if (msg.id !== undefined && msg.method) {
    // A server request: decline it (approvals are off; nothing should ask).
    console.log(`server request: ${msg.method}`);
    return send({ id: msg.id, error: { code: -32601, message: "declined by the test client" } });
  }
  if (msg.id !== undefined) {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    return msg.error ? p.reject(new Error(`${p.method}: ${JSON.stringify(msg.error)}`)) : p.resolve(msg.result);
  }
  for (const [i, w] of waiters.entries()) {
    if (w.method === msg.method && w.match(msg.params || {})) {
      waiters.splice(i, 1);
      w.resolve(msg.params || {});
      break;
    }
  }
});

try {
  await request("initialize", { clientInfo: { name: "agentauth-hosts", title: null, version: "1.0.0" }, capabilities: null });
  send({ method: "initialized" });

  if (login) {
    const done = notification("mcpServer/oauthLogin/completed", (p) => p.name === server);
    const { authorizationUrl } = await request("mcpServer/oauth/login", { name: server });
    const u = new URL(authorizationUrl);
    console.log(`login url: ${u.origin}${u.pathname} client_id=${u.searchParams.get("client_id")}`);
    spawn(process.env.BROWSER, [authorizationUrl], { stdio: "ignore" });
    const result = await done;
    console.log(`login: success=${result.success}${result.error ? ` error=${result.error}` : ""}`);
  }

  const { thread } = await request("thread/start", { cwd: process.cwd(), approvalPolicy: "never", sandbox: "danger-full-access" });
  const { data } = await request("mcpServerStatus/list", { threadId: thread.id, serverName: server });
  const status = data.find((s) => s.name === server);
  console.log(`status: ${status?.authStatus} tools=${Object.keys(status?.tools || {}).join(",")}`);

  const direct = await request("mcpServer/tool/call", { threadId: thread.id, server, tool, arguments: {} });
  console.log(`direct call: ${JSON.stringify(direct)}`);

  const items = [];
  const collect = (p) => {
    if (p.threadId === thread.id) items.push(p.item);
    return false;
  };
  waiters.push({ method: "item/completed", match: collect, resolve: () => {} });
  const completed = notification("turn/completed", (p) => p.threadId === thread.id);
  await request("turn/start", {
    threadId: thread.id,
    input: [{ type: "text", text: `Please call the tool named ${tool} now.`, text_elements: [] }],
  });
  const { turn } = await completed;
  for (const item of items.filter((i) => i.type === "mcpToolCall")) {
    console.log(`turn item: mcpToolCall ${item.server}/${item.tool} ${item.status} ${JSON.stringify(item.result ?? item.error)}`);
  }
  const agent = items.filter((i) => i.type === "agentMessage").map((i) => i.text).join(" ");
  console.log(`turn: ${turn.status} agent: ${agent}`);
  child.removeAllListeners("exit");
  child.kill();
  process.exit(0);
} catch (err) {
  fail(err.message);
}
