// A client ID metadata document (CIMD: draft-ietf-oauth-client-id-metadata-document,
// MCP 2025-11-25 "Authorization", Client ID Metadata Documents) served on
// loopback, for the Inspector's --client-metadata-url: the client_id is the
// document's own URL, and its one redirect URI is the callback given.
// Usage: node cimd-document.mjs ADDRFILE CALLBACK_URL (writes HOST:PORT).
import fs from 'node:fs';
import http from 'node:http';

const [addrFile, callback] = process.argv.slice(2);
const server = http.createServer((req, res) => {
  if (req.url !== '/client.json') {
    res.writeHead(404).end();
    return;
  }
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({
    client_id: `http://127.0.0.1:${server.address().port}/client.json`,
    client_name: 'MCP Inspector (client metadata document)',
    redirect_uris: [callback],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }));
});
server.listen(0, '127.0.0.1', () => fs.writeFileSync(addrFile, `127.0.0.1:${server.address().port}\n`));
