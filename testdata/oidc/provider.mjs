// A real OpenID Provider for agentauth's sign-in tests: oidc-provider
// (pinned in package-lock.json) on 127.0.0.1, a free port.
//
// Usage: node provider.mjs ADDRFILE CLIENTSFILE
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
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const [addrFile, clientsFile] = process.argv.slice(2);
if (!addrFile || !clientsFile) {
  console.error('usage: node provider.mjs ADDRFILE CLIENTSFILE');
  process.exit(2);
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
      return clients.find((c) => c.client_id === id);
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
    features: { devInteractions: { enabled: true } },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  const tmp = `${addrFile}.tmp`;
  fs.writeFileSync(tmp, `127.0.0.1:${port}\n`);
  fs.renameSync(tmp, addrFile);
  console.error(`oidc-provider listening on http://127.0.0.1:${port}/`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { server.close(); process.exit(0); });
