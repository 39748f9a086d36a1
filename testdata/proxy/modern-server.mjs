// An MCP server of revision 2026-07-28 only, built with the MCP TypeScript
// SDK v2 (@modelcontextprotocol/server, pinned in package-lock.json):
// createMcpHandler with legacy: 'reject', so a client's 2025-era
// initialize gets 400 UNSUPPORTED_PROTOCOL_VERSION, as such servers answer.
// Tools: echo {text}; greet, which asks the client for a name through an
// input request (a form elicitation, "Multi Round-Trip Requests") and
// greets it. No authorization. Node's http server feeds the SDK's
// web-standard fetch handler.
//
// Usage: node modern-server.mjs ADDR_FILE (gets 127.0.0.1:PORT and a newline)
import { createServer } from 'node:http';
import { renameSync, writeFileSync } from 'node:fs';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import { z } from 'zod';

const [addrFile] = process.argv.slice(2);
const nameSchema = z.object({ name: z.string() });
const handler = createMcpHandler(() => {
  const s = new McpServer({ name: 'sdk2-modern', version: '1.0.0' });
  s.registerTool('echo', { description: 'Returns its text.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  s.registerTool('greet', { description: 'Asks for your name and greets you.' }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name', nameSchema);
    if (!answer) {
      return inputRequired({ inputRequests: { name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: nameSchema }) } });
    }
    return { content: [{ type: 'text', text: `Hello, ${answer.name}!` }] };
  });
  return s;
}, { legacy: 'reject' });

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const hasBody = !['GET', 'HEAD'].includes(req.method);
  const response = await handler.fetch(new Request(`http://${req.headers.host}${req.url}`,
    { method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined }));
  const out = {};
  response.headers.forEach((v, k) => { out[k] = v; });
  res.writeHead(response.status, out);
  if (response.body) for await (const chunk of response.body) res.write(chunk);
  res.end();
});
server.listen(0, '127.0.0.1', () => {
  writeFileSync(addrFile + '.tmp', `127.0.0.1:${server.address().port}\n`);
  renameSync(addrFile + '.tmp', addrFile);
});
