// The MCP TypeScript SDK v2 (@modelcontextprotocol/client, MCP 2026-07-28)
// against agentauth serve's upstream broker (run by run.sh), pinned to
// 2026-07-28 (server/discover, a _meta envelope on every request):
//   - its own OAuth client signs in at the broker's embedded issuer
//     (dynamic registration, PKCE S256, the resource indicator, and the
//     RFC 9207 iss of the authorization response, which v2 checks);
//   - in that login's session, upstream_call answers input_required with
//     a URL elicitation: the SDK hands it to the client's
//     elicitation/create handler, which follows the link like a browser
//     and accepts; the SDK sends the call again with inputResponses and
//     the server's requestState, and Rally sees alice;
//   - the same SDK without pinning (its default, the 2025 handshake), with
//     the agentauth token, gets 2025-11-25.
//
//   node client2.mjs BROKER_MCP_URL RALLY_HOST RALLY_CLIENT_ID   (token in $MCP_TOKEN)
//
// Prints "ok   CHECK" per check; on the first failure "FAIL CHECK" and exits 1.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { check, follow, oauthProvider } from './checks.mjs';

const [endpoint, rallyHost, rallyClientId] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;
if (!endpoint || !rallyHost || !rallyClientId || !token) {
  console.error('usage: MCP_TOKEN=… node client2.mjs BROKER_MCP_URL RALLY_HOST RALLY_CLIENT_ID');
  process.exit(2);
}
const base = new URL(endpoint).origin;
const modern = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// The SDK's OAuth client.
let signedIn; // a transport with the SDK's own login
{
  const { provider, saved } = oauthProvider('MCP TypeScript SDK v2 check', 'sdk2-state');
  const transport = () => new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider });
  const t1 = transport();
  let err;
  try {
    await new Client({ name: 'sdk2-check', version: '1.0.0' }, modern).connect(t1);
  } catch (e) {
    err = e;
  }
  check('v2: the SDK registers a client and sends the user to the issuer',
    err instanceof UnauthorizedError && saved.authorizationUrl?.origin === base && saved.client?.client_id, `${err} ${saved.authorizationUrl}`);
  check('v2: with PKCE S256 and the resource indicator',
    saved.authorizationUrl.searchParams.get('code_challenge_method') === 'S256' && saved.authorizationUrl.searchParams.get('resource') === endpoint,
    saved.authorizationUrl.toString());
  const r = await fetch(saved.authorizationUrl, { redirect: 'manual' });
  const back = new URL(r.headers.get('location') ?? '', saved.authorizationUrl);
  check('v2: the issuer redirects back with the code, the state and its iss (RFC 9207)',
    back.searchParams.get('code') && back.searchParams.get('state') === 'sdk2-state' && back.searchParams.get('iss') === base, back.toString());
  await t1.finishAuth(back.searchParams);
  check('v2: finishAuth checks iss and exchanges the code', saved.tokens?.access_token && saved.tokens?.refresh_token, Object.keys(saved.tokens ?? {}));
  const c = new Client({ name: 'sdk2-check', version: '1.0.0' }, modern);
  await c.connect(transport());
  check('v2: connected over MCP 2026-07-28', c.getNegotiatedProtocolVersion() === '2026-07-28', c.getNegotiatedProtocolVersion());
  const who = text(await c.callTool({ name: 'whoami', arguments: {} }));
  check("v2: whoami names alice and the SDK's registered client",
    who.includes('"subject":"alice"') && who.includes(`"clientId":"${saved.client.client_id}"`), who);
  await c.close();
  signedIn = transport;
}

// upstream_call: the input request of 2026-07-28, fulfilled by the SDK,
// in the session of the SDK's own login (not yet signed in to Rally).
{
  const c = new Client({ name: 'sdk2-check', version: '1.0.0' },
    { ...modern, capabilities: { elicitation: { url: {} } } });
  let asked;
  let walk;
  c.setRequestHandler('elicitation/create', async (req) => {
    asked = req.params;
    walk = await follow(req.params.url);
    return { action: 'accept' };
  });
  await c.connect(signedIn());
  const res = await c.callTool({ name: 'upstream_call', arguments: { upstream: 'rally' } });
  check('v2: upstream_call asks through a URL elicitation of input_required',
    asked?.mode === 'url' && asked.url.startsWith(`${base}/auth/start?id=`) && /Rally/.test(asked.message), asked);
  check('v2: the browser went through Rally and back to the callback',
    walk.hops.some((h) => h.startsWith(`GET ${rallyHost} /authorize `)) && /\/callback -> 200$/.test(walk.hops.at(-1)), walk.hops);
  const out = text(res);
  check('v2: the SDK sends the call again and Rally sees alice, through the broker\'s client',
    res.isError !== true && /subject[^a-z]+alice/.test(out) && out.includes(rallyClientId), res);
  await c.close();
}

// Not pinned: the SDK's default, the 2025 handshake.
{
  const c = new Client({ name: 'sdk2-check', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  check('v2 not pinned: MCP 2025-11-25 through initialize', c.getNegotiatedProtocolVersion() === '2025-11-25', c.getNegotiatedProtocolVersion());
  const who = text(await c.callTool({ name: 'whoami', arguments: {} }));
  check('v2 not pinned: whoami names alice', who.includes('"subject":"alice"'), who);
  await c.close();
}
