// A real OpenID Provider for agentauth's sign-in tests: oidc-provider
// (pinned in package-lock.json) on 127.0.0.1, a free port.
//
// Usage: node provider.mjs ADDRFILE CLIENTSFILE [RESOURCESFILE]
//
// It listens on 127.0.0.1:0, with the issuer "http://127.0.0.1:PORT/"
// (a trailing slash, as some real providers have), and writes
// "127.0.0.1:PORT" to ADDRFILE once it serves. Its clients are read from
// CLIENTSFILE (a JSON array of client metadata) at each lookup, so a test
// can register serve's redirect URI once serve listens. Its login and
// consent are oidc-provider's own devInteractions pages (any password):
// the account id typed is the sub. Accounts: alice (alice@example.com,
// groups agents), bob (bob@example.com), mallory (mallory@evil.example);
// every e-mail address is verified.
//
// With RESOURCESFILE it is also an OAuth authorization server for
// protected resources (RFC 8707 resource indicators): the file maps each
// resource URL to {"scope": "…", "accessTokenFormat": "opaque" | "jwt"}
// and is read at each lookup. Its introspection endpoint (RFC 7662) is on,
// (and revocation, RFC 7009), and it has an RFC 8693 token exchange grant, registered with
// oidc-provider's documented provider.registerGrantType (see
// tokenExchange below).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const [addrFile, clientsFile, resourcesFile] = process.argv.slice(2);
if (!addrFile || !clientsFile) {
  console.error('usage: node provider.mjs ADDRFILE CLIENTSFILE [RESOURCESFILE]');
  process.exit(2);
}

// resourceServer is the RESOURCESFILE entry of a resource indicator.
function resourceServer(indicator) {
  const resources = resourcesFile ? JSON.parse(fs.readFileSync(resourcesFile, 'utf8')) : {};
  const rs = resources[indicator];
  if (!rs) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  return { audience: indicator, scope: rs.scope, accessTokenFormat: rs.accessTokenFormat || 'opaque', accessTokenTTL: rs.accessTokenTTL || 3600 };
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

// tokenExchange is the RFC 8693 §2 grant: the subject token must be an
// access token this provider issued and still holds as valid (its
// AccessToken model: unknown, expired or revoked tokens are refused with
// invalid_grant); the requested resource must be one RESOURCESFILE names;
// the issued token is an access token of the same user for that
// resource, with the requested scopes that resource has (default: the
// subject token's that it has), and an act claim naming the client that
// asked (§4.1).
async function tokenExchange(ctx) {
  const { params, client } = ctx.oidc;
  const provider = ctx.oidc.provider;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest('subject_token_type must be an access token');
  }
  if (params.requested_token_type && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest('only access tokens are issued');
  }
  const subject = await provider.AccessToken.find(params.subject_token);
  if (!subject || !subject.isValid) throw new errors.InvalidGrant('the subject token is not valid');
  if (!params.resource) throw new errors.InvalidTarget('name the resource to exchange for');
  const rs = new provider.ResourceServer(params.resource, resourceServer(params.resource));
  const allowed = rs.scopes;
  const requested = (params.scope || subject.scope || '').split(' ').filter(Boolean);
  const scope = requested.filter((s) => allowed.has(s));
  if (params.scope && scope.length !== requested.length) throw new errors.InvalidScope('a requested scope is not the resource\'s', requested.find((s) => !allowed.has(s)));
  const token = new provider.AccessToken({
    accountId: subject.accountId, client, grantId: subject.grantId, gty: 'token_exchange',
    scope: scope.join(' ') || undefined, extra: { act: { sub: client.clientId } },
  });
  token.resourceServer = rs;
  const value = await token.save();
  console.error(`token exchange: client=${client.clientId} sub=${subject.accountId} resource=${params.resource} scope=${token.scope || ''}`);
  ctx.body = {
    access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer',
    expires_in: token.expiration, scope: token.scope,
  };
}

// Adapter keeps the provider's state in memory; the Client model is read
// from CLIENTSFILE.
const stores = new Map();
class Adapter {
  constructor(name) {
    this.name = name;
    if (!stores.has(name)) stores.set(name, new Map());
    this.store = stores.get(name);
  }
  async upsert(id, payload) { this.store.set(id, payload); }
  async find(id) {
    if (this.name === 'Client') {
      const clients = JSON.parse(fs.readFileSync(clientsFile, 'utf8'));
      const c = clients.find((cl) => cl.client_id === id);
      // A test's convenience: public_key_pem_file, a PEM public key, is
      // the private_key_jwt client's jwks.
      if (c?.public_key_pem_file) {
        const { public_key_pem_file: file, ...rest } = c;
        return { ...rest, jwks: { keys: [crypto.createPublicKey(fs.readFileSync(file, 'utf8')).export({ format: 'jwk' })] } };
      }
      return c;
    }
    return this.store.get(id);
  }
  async findByUserCode(code) { return [...this.store.values()].find((p) => p.userCode === code); }
  async findByUid(uid) { return [...this.store.values()].find((p) => p.uid === uid); }
  async consume(id) { const p = this.store.get(id); if (p) p.consumed = Math.floor(Date.now() / 1000); }
  async destroy(id) { this.store.delete(id); }
  async revokeByGrantId(grantId) {
    for (const [k, p] of this.store) if (p.grantId === grantId) this.store.delete(k);
  }
}

const domains = { mallory: 'evil.example' };
const groups = { alice: ['agents'] };

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const provider = new Provider(`http://127.0.0.1:${port}/`, {
    adapter: Adapter,
    clients: [],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
    async findAccount(ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, name: id, email: `${id}@${domains[id] || 'example.com'}`, email_verified: true, groups: groups[id] || [] };
        },
      };
    },
    features: {
      devInteractions: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: (ctx, indicator) => resourceServer(indicator),
      },
    },
  });
  provider.registerGrantType(TOKEN_EXCHANGE, tokenExchange,
    ['subject_token', 'subject_token_type', 'requested_token_type', 'actor_token', 'actor_token_type', 'audience', 'resource', 'scope'], ['resource', 'audience']);
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  const tmp = `${addrFile}.tmp`;
  fs.writeFileSync(tmp, `127.0.0.1:${port}\n`);
  fs.renameSync(tmp, addrFile);
  console.error(`oidc-provider listening on http://127.0.0.1:${port}/`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { server.close(); process.exit(0); });
