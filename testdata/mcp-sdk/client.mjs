// The official MCP TypeScript SDK's Streamable HTTP client against
// agentauth serve's upstream broker (run by run.sh).
//
//   node client.mjs BROKER_MCP_URL RALLY_HOST RALLY_CLIENT_ID   (token in $MCP_TOKEN)
//
// Prints "ok   CHECK" per check; on the first failure prints "FAIL CHECK"
// with what it saw and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  discoverOAuthProtectedResourceMetadata,
  discoverAuthorizationServerMetadata,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { ErrorCode, UrlElicitationRequiredError, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { check, follow, oauthProvider } from './checks.mjs';

const [endpoint, rallyHost, rallyClientId] = process.argv.slice(2);
const token = process.env.MCP_TOKEN;
if (!endpoint || !rallyHost || !rallyClientId || !token) {
  console.error('usage: MCP_TOKEN=… node client.mjs BROKER_MCP_URL RALLY_HOST RALLY_CLIENT_ID');
  process.exit(2);
}
const base = new URL(endpoint).origin;
const auth = { Authorization: `Bearer ${token}` };
// pollLimit bounds the /auth-status polling (100 ms apart).
const pollLimit = 100;

function connect(headers) {
  const client = new Client({ name: 'agentauth-mcp-sdk-check', version: '1.0.0' },
    { capabilities: { elicitation: { url: {} } } });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers } });
  return { client, transport };
}

function resultText(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// The SDK's own discovery reads serve's RFC 9728 and RFC 8414 metadata.
const prm = await discoverOAuthProtectedResourceMetadata(endpoint);
check('the SDK reads the protected resource metadata', prm.resource === endpoint, prm);
const asm = await discoverAuthorizationServerMetadata(prm.authorization_servers[0]);
check('the SDK reads the authorization server metadata (S256)', asm?.code_challenge_methods_supported?.includes('S256'), asm);

// Without a token: the SDK's transport reports the 401.
{
  const { client, transport } = connect({});
  let err;
  try {
    await client.connect(transport);
  } catch (e) {
    err = e;
  }
  check('without a token the SDK sees HTTP 401', err?.code === 401, String(err));
  await client.close().catch(() => {});
}

// The SDK's own OAuth client (an OAuthClientProvider) signs in at the
// broker's embedded issuer: discovery from the 401, dynamic registration,
// PKCE; the "browser" stops at the redirect, and finishAuth exchanges the
// code.
{
  const { provider, saved, redirectUrl } = oauthProvider('MCP TypeScript SDK check', 'sdk-state');
  const newTransport = () => new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider });
  let first = new Client({ name: 'agentauth-mcp-sdk-check', version: '1.0.0' });
  const t1 = newTransport();
  let err;
  try {
    await first.connect(t1);
  } catch (e) {
    err = e;
  }
  check('the SDK registers a client and sends the user to the issuer',
    err instanceof UnauthorizedError && saved.authorizationUrl?.origin === base && saved.client?.client_id, `${err} ${saved.authorizationUrl}`);
  check('with PKCE S256 and the resource indicator',
    saved.authorizationUrl.searchParams.get('code_challenge_method') === 'S256' && saved.authorizationUrl.searchParams.get('resource') === endpoint,
    saved.authorizationUrl.toString());
  const r = await fetch(saved.authorizationUrl, { redirect: 'manual' });
  const loc = new URL(r.headers.get('location') ?? '', saved.authorizationUrl);
  check('the issuer redirects back with the code and state',
    loc.toString().startsWith(redirectUrl) && loc.searchParams.get('code') && loc.searchParams.get('state') === 'sdk-state', loc.toString());
  await t1.finishAuth(loc.searchParams.get('code'));
  check('finishAuth exchanges the code for a token', saved.tokens?.access_token && saved.tokens?.refresh_token, Object.keys(saved.tokens ?? {}));
  first = new Client({ name: 'agentauth-mcp-sdk-check', version: '1.0.0' });
  await first.connect(newTransport());
  const who = resultText(await first.callTool({ name: 'whoami', arguments: {} }));
  check("whoami names alice and the SDK's registered client",
    who.includes('"subject":"alice"') && who.includes(`"clientId":"${saved.client.client_id}"`), who);
  await first.close();
}

const { client, transport } = connect(auth);
await client.connect(transport);
check(`connected at the SDK's latest version (${LATEST_PROTOCOL_VERSION})`, transport.protocolVersion === LATEST_PROTOCOL_VERSION,
  transport.protocolVersion);
const { tools } = await client.listTools();
check('tools/list has upstream_call', tools.some((t) => t.name === 'upstream_call'), tools.map((t) => t.name));

const status = async () => {
  const r = await fetch(`${base}/auth-status?upstream=rally`, { headers: auth });
  return r.json();
};
check('/auth-status: not signed in to Rally', (await status()).authenticated === false);

// The first call: URLElicitationRequiredError (-32042) with the sign-in url.
const args = { name: 'upstream_call', arguments: { upstream: 'rally' } };
let elicitation;
try {
  const res = await client.callTool(args);
  check('upstream_call asks for a sign-in', false, res);
} catch (e) {
  check('the SDK raises UrlElicitationRequiredError (-32042)',
    e instanceof UrlElicitationRequiredError && e.code === ErrorCode.UrlElicitationRequired, String(e));
  elicitation = e.elicitations[0];
}
check('the elicitation is url mode, with an id and a message',
  elicitation?.mode === 'url' && /^[A-Z0-9]+$/.test(elicitation.elicitationId) && /Rally/.test(elicitation.message), elicitation);
check("its url is serve's /auth/start", elicitation.url.startsWith(`${base}/auth/start?id=`), elicitation.url);

// The user's browser: manual redirects and a cookie jar. The link is bound
// to the session's user: the browser signs in at the broker's issuer (which
// approves at once, and so skips the confirmation page; a confirmation
// page would be submitted, POST /auth/start).
const { hops, page } = await follow(elicitation.url);
check('the browser went through Rally and back to the callback',
  hops.some((h) => h.startsWith(`GET ${rallyHost} /authorize `)) && /\/callback -> 200$/.test(hops.at(-1)), hops);
check('the bound link went through the issuer\'s login', hops.some((h) => /^GET .* \/login -> 302$/.test(h)), hops);
check('the browser lands on the success page', /Signed in/.test(page ?? ''), page);

// Poll /auth-status until the sign-in shows.
let signedIn = false;
for (let i = 0; i < pollLimit && !signedIn; i++) {
  signedIn = (await status()).authenticated === true;
  if (!signedIn) await new Promise((r) => setTimeout(r, 100));
}
check('/auth-status: signed in to Rally', signedIn);

// The retry runs the tool: Rally saw alice's upstream token, issued to the broker's client.
const res = await client.callTool(args);
const text = resultText(res);
check('the retry succeeds', res.isError === false, res);
check('Rally saw alice', /subject[^a-z]+alice/.test(text), text);
check("through the broker's client at Rally", text.includes(rallyClientId), text);
await client.close();
