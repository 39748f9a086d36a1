// A legacy MCP server: the HTTP+SSE transport of MCP 2024-11-05 only
// (GET /sse opens the stream and names POST /messages?sessionId=… in its
// "endpoint" event), built with the pinned TypeScript SDK's
// SSEServerTransport. POST /sse (Streamable HTTP) is 404, as on a server of
// that revision. With API_KEY, every request must carry X-Api-Key: API_KEY
// (proxy --header). It listens on 127.0.0.1:0 and writes its address to
// ADDRFILE.
//
// Usage: node legacy-sse.mjs ADDRFILE [API_KEY]
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import * as z from 'zod/v4';

const transports = new Map();

function mcpServer() {
  const server = new McpServer({ name: 'legacy-sse', version: '1.0.0' });
  server.registerTool('add', {
    description: 'Adds two numbers',
    inputSchema: { a: z.number(), b: z.number() },
  }, async ({ a, b }, extra) => {
    // One progress notification when the client asked for it.
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 1 } });
    }
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  return server;
}

const http = createServer(async (req, res) => {
  const key = process.argv[3];
  if (key && req.headers['x-api-key'] !== key) {
    res.writeHead(403).end('missing X-Api-Key');
    return;
  }
  const url = new URL(req.url, 'http://127.0.0.1');
  if (req.method === 'GET' && url.pathname === '/sse') {
    const transport = new SSEServerTransport('/messages', res);
    transports.set(transport.sessionId, transport);
    res.on('close', () => transports.delete(transport.sessionId));
    await mcpServer().connect(transport);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/messages') {
    const transport = transports.get(url.searchParams.get('sessionId'));
    if (!transport) {
      res.writeHead(404).end('no such session');
      return;
    }
    await transport.handlePostMessage(req, res);
    return;
  }
  res.writeHead(404).end('not found');
});
http.listen(0, '127.0.0.1', () => {
  writeFileSync(process.argv[2], `127.0.0.1:${http.address().port}\n`);
});
process.on('SIGINT', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
