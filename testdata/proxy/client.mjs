// The MCP TypeScript SDK's client over its StdioClientTransport, which
// starts `agentauth proxy …` as its server. It lists the tools, calls one,
// and with flags exercises what passes through the proxy both ways:
//   --tool NAME --args JSON   the call (its text is printed);
//   --progress                asks for progress on the call and counts the
//                             notifications/progress received;
//   --logging N               counts the notifications/message received,
//                             waiting (at most 5 s) for N of them: a server
//                             sends them on its GET stream, which may be
//                             read after the call's own response;
//   --elicit                  declares elicitation and answers the server's
//                             elicitation/create (a server-to-client request);
//   --cancel NAME             calls NAME, aborts it at its first
//                             notification (notifications/cancelled goes to
//                             the server), then calls --tool again.
// Prints one line per result; exits 1 on an error.
//
// Usage: node client.mjs [flags] -- COMMAND [ARG…]
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const flags = argv.slice(0, sep);
const [command, ...args] = argv.slice(sep + 1);
const flag = (name) => flags.includes(name);
const value = (name, dflt) => (flags.includes(name) ? flags[flags.indexOf(name) + 1] : dflt);

// The whole environment: the SDK passes only a few variables by default,
// and the scripts set AGENTAUTH_STORE, HOME and BROWSER for the proxy.
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const capabilities = flag('--elicit') ? { elicitation: { form: {} } } : {};
const client = new Client({ name: 'ts-sdk-stdio', version: '1.0.0' }, { capabilities });
let logging = 0;
// Progress is counted as it arrives (the SDK's onprogress runs after the
// response when both come in one read, and then finds no handler).
let progress = 0;
client.setNotificationHandler(ProgressNotificationSchema, () => { progress++; });
client.setNotificationHandler(LoggingMessageNotificationSchema, () => { logging++; });
if (flag('--elicit')) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    console.log(`elicitation: ${req.params.message}`);
    return { action: 'accept', content: { name: 'Alice', email: 'alice@example.com' } };
  });
}

try {
  await client.connect(transport);
  console.log(`server: ${client.getServerVersion().name}`);
  const { tools } = await client.listTools();
  console.log(`tools: ${tools.map((t) => t.name).join(' ')}`);
  const tool = value('--tool');
  const toolArgs = JSON.parse(value('--args', '{}'));
  const call = async () => {
    progress = 0;
    const opts = flag('--progress') ? { onprogress: () => {} } : {};
    const res = await client.callTool({ name: tool, arguments: toolArgs }, undefined, opts);
    const text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join(' ');
    if (res.isError) throw new Error(`tool error: ${text}`);
    console.log(`call: ${text}`);
    if (flag('--progress')) console.log(`progress: ${progress}`);
  };
  const cancel = value('--cancel');
  if (cancel) {
    const ac = new AbortController();
    const before = logging;
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => { logging++; ac.abort('enough'); });
    try {
      await client.callTool({ name: cancel, arguments: toolArgs }, undefined, { signal: ac.signal });
      console.log('cancel: the call completed');
    } catch (e) {
      console.log(`cancel: aborted after ${logging - before} notification(s)`);
    }
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => { logging++; });
  }
  await call();
  if (flag('--logging')) {
    const want = Number(value('--logging'));
    for (let i = 0; i < 100 && logging < want; i++) await new Promise((r) => setTimeout(r, 50));
    console.log(`logging: ${logging}`);
  }
  await client.close();
} catch (e) {
  console.log(`error: ${e.message}`);
  process.exit(1);
}
