// The official MCP TypeScript SDK's client (pinned in
// ../mcp-sdk/package-lock.json) using a backend's tools, resources,
// prompts, sampling and elicitation through agentauth serve's gateway
// (run by run.sh from a directory holding those pins).
//
//   MCP_TOKEN=… node tsclient.mjs everything|conformance|modern URL
//
// modern is a server of MCP 2026-07-28 only (../proxy/modern-server.mjs),
// which this client (MCP 2025-11-25) reaches through serve's bridge.
//
// Prints "ok   CHECK" per check; on the first failure "FAIL CHECK" with
// what it saw, and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { check } from './checks.mjs';

const [backend, endpoint] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;
if (!backend || !endpoint || !token) {
  console.error('usage: MCP_TOKEN=… node tsclient.mjs everything|conformance|modern URL');
  process.exit(2);
}

const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const client = new Client({ name: 'agentauth-gateway-ts-check', version: '1.0.0' },
  { capabilities: { sampling: {}, elicitation: { form: {} } } });
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  model: 'check-model', role: 'assistant', content: { type: 'text', text: 'sampled through serve' },
}));
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const schema = req.params.requestedSchema ?? {};
  const content = {};
  const formats = { email: 'ada@example.com', uri: 'https://example.com/', date: '2026-01-02', 'date-time': '2026-01-02T03:04:05Z' };
  for (const name of schema.required ?? []) {
    const p = schema.properties[name];
    if (p.enum) content[name] = p.enum[0];
    else if (p.type === 'string') content[name] = formats[p.format] ?? 'Ada';
    else if (p.type === 'boolean') content[name] = true;
    else if (p.type === 'number' || p.type === 'integer') content[name] = 7;
  }
  return { action: 'accept', content };
});
const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
await client.connect(transport);
check('the TypeScript SDK client initializes through serve', true);

const tools = (await client.listTools()).tools.map((t) => t.name);
if (backend === 'everything') {
  check('tools/list shows the backend\'s tools', tools.includes('echo') && tools.includes('trigger-sampling-request'), tools);
  check('tools/call echo', text(await client.callTool({ name: 'echo', arguments: { message: 'hello' } })).includes('hello'));
  const res = await client.listResources();
  check('resources/list', res.resources.length > 0, res);
  const rr = await client.readResource({ uri: res.resources[0].uri });
  check('resources/read', rr.contents.length > 0, rr);
  const pr = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon' } });
  check('prompts/get', pr.messages.length > 0, pr);
  const s = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
  check('sampling through serve', text(s).includes('sampled through serve'), s);
  const e = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  check('elicitation through serve', text(e).includes('accept'), e);
} else if (backend === 'modern') {
  check('tools/list shows the backend\'s tools', tools.includes('echo') && tools.includes('greet'), tools);
  check('initialize answered from the backend\'s server/discover', client.getServerVersion()?.name === 'sdk2-modern', client.getServerVersion());
  check('tools/call echo', text(await client.callTool({ name: 'echo', arguments: { text: 'bridged' } })) === 'bridged');
  const g = await client.callTool({ name: 'greet', arguments: {} });
  check('an input request of the backend comes as elicitation and its answer goes back', text(g) === 'Hello, Ada!', g);
  await client.ping();
  check('ping', true);
} else {
  check('tools/list shows the backend\'s tools', tools.includes('test_sampling') && tools.includes('test_simple_text'), tools);
  check('tools/call', text(await client.callTool({ name: 'test_simple_text', arguments: {} })) !== '');
  const rr = await client.readResource({ uri: 'test://static-text' });
  check('resources/read', rr.contents.length > 0, rr);
  const pr = await client.getPrompt({ name: 'test_simple_prompt' });
  check('prompts/get', pr.messages.length > 0, pr);
  const s = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } });
  check('sampling through serve', text(s).includes('sampled through serve'), s);
  const e = await client.callTool({ name: 'test_elicitation', arguments: { message: 'name?' } });
  check('elicitation through serve', text(e).includes('accept'), e);
}
await client.close();
