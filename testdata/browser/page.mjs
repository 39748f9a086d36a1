// page.mjs serves one web page, an MCP client written as a page of a web
// app would write it (fetch, no library), on two loopback origins: the
// first address is meant to be allowed by serve (--allowed-origin), the
// second not. drive.mjs opens it in Chromium with the MCP endpoint and a
// token, and the page writes what each request got into window.results.
//
// Usage: node page.mjs ALLOWED_ADDR_FILE FOREIGN_ADDR_FILE
// Each file gets 127.0.0.1:PORT and a newline once its server listens.
import { createServer } from 'node:http';
import { writeFileSync, renameSync } from 'node:fs';

const html = `<!doctype html>
<meta charset="utf-8">
<title>MCP client page</title>
<script type="module">
const q = new URLSearchParams(location.search);
const mcp = q.get('mcp');
const token = window.mcpToken;
const results = [];
// body reads one JSON-RPC message from a JSON or an event-stream answer.
async function body(r) {
  const text = await r.text();
  if (!(r.headers.get('Content-Type') || '').includes('text/event-stream')) return text ? JSON.parse(text) : null;
  const data = text.split('\\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).filter(Boolean);
  return data.length ? JSON.parse(data[data.length - 1]) : null;
}
function post(msg, sid, withToken = true) {
  const headers = {
    'Content-Type': 'application/json',
    'Accept': 'application/json, text/event-stream',
    'Mcp-Protocol-Version': '2025-11-25',
  };
  if (withToken) headers.Authorization = 'Bearer ' + token;
  if (sid) headers['Mcp-Session-Id'] = sid;
  return fetch(mcp, { method: 'POST', headers, body: JSON.stringify(msg) });
}
try {
  let r = await post({ jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'web page', version: '1' } } });
  const sid = r.headers.get('Mcp-Session-Id');
  let m = await body(r);
  results.push('initialize: HTTP ' + r.status + ', session id ' + (sid ? 'readable' : 'hidden') + ', server ' + m.result.serverInfo.name);
  r = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
  results.push('notifications/initialized: HTTP ' + r.status);
  r = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'from a web page' } } }, sid);
  m = await body(r);
  results.push('tools/call: HTTP ' + r.status + ', ' + m.result.content[0].text);
  r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, sid, false);
  const challenge = r.headers.get('WWW-Authenticate');
  results.push('without a token: HTTP ' + r.status + ', challenge ' + (challenge ? 'readable' : 'hidden'));
  const metadata = /resource_metadata="([^"]+)"/.exec(challenge || '');
  if (metadata) {
    const doc = await (await fetch(metadata[1])).json();
    results.push('protected resource metadata: resource ' + doc.resource);
  }
  r = await fetch(mcp, { method: 'DELETE', headers: { Authorization: 'Bearer ' + token, 'Mcp-Session-Id': sid } });
  results.push('DELETE: HTTP ' + r.status);
} catch (e) {
  results.push('refused by the browser: ' + e.name + ': ' + e.message);
}
window.results = results;
window.done = true;
</script>
`;

function serve(addrFile) {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || new URL(req.url, 'http://x').pathname !== '/') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(html);
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    writeFileSync(addrFile + '.tmp', `127.0.0.1:${port}\n`);
    renameSync(addrFile + '.tmp', addrFile);
  });
  return server;
}

const [allowed, foreign] = process.argv.slice(2);
if (!allowed || !foreign) {
  console.error('usage: node page.mjs ALLOWED_ADDR_FILE FOREIGN_ADDR_FILE');
  process.exit(2);
}
const servers = [serve(allowed), serve(foreign)];
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { for (const s of servers) s.close(); process.exit(0); });
