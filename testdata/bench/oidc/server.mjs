// The reference authorization server of testdata/bench/refresh.sh:
// oidc-provider (pinned in package.json) with its default in-memory
// adapter, one public client that may refresh (refresh tokens rotate, as
// oidc-provider does for public clients), and CHAINS refresh tokens
// minted for it through oidc-provider's own models (a Grant and a
// RefreshToken, as its authorization code grant would create them), so
// that no browser interaction is needed.
//
// Usage: node server.mjs ADDRFILE TOKENSFILE CHAINS
// It writes 127.0.0.1:PORT to ADDRFILE and one refresh token per line to
// TOKENSFILE, and serves until killed.
import { writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const [addrFile, tokensFile, chains] = process.argv.slice(2);
const provider = new Provider('http://127.0.0.1', {
  clients: [{
    client_id: 'bench',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback'],
  }],
  scopes: ['openid', 'offline_access'],
  ttl: { AccessToken: 3600, RefreshToken: 14 * 24 * 3600, Grant: 14 * 24 * 3600 },
  // The default is to ask a user to consent to offline_access.
  issueRefreshToken: async () => true,
});
provider.on('server_error', (ctx, err) => console.error('oidc-provider:', err));

const client = await provider.Client.find('bench');
const tokens = [];
for (let i = 0; i < Number(chains); i++) {
  const grant = new provider.Grant({ accountId: 'alice', clientId: 'bench' });
  grant.addOIDCScope('offline_access');
  const grantId = await grant.save();
  const rt = new provider.RefreshToken({
    accountId: 'alice', client, grantId, scope: 'offline_access', gty: 'authorization_code',
    authTime: Math.floor(Date.now() / 1000),
  });
  tokens.push(await rt.save());
}
writeFileSync(tokensFile, tokens.join('\n') + '\n');
const server = createServer(provider.callback());
server.listen(0, '127.0.0.1', () => {
  writeFileSync(addrFile + '.tmp', `127.0.0.1:${server.address().port}\n`);
  renameSync(addrFile + '.tmp', addrFile);
});
process.on('SIGINT', () => server.close(() => process.exit(0)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
