// What the SDK checks (client.mjs, client2.mjs) share.

// follow is the user's browser: it follows a sign-in link with manual
// redirects and a cookie jar, submits serve's confirmation page (POST
// /auth/start) when one shows, and returns each hop ("METHOD HOST PATH ->
// STATUS") and the last page.
export async function follow(url) {
  const jar = new Map();
  let next = url;
  let post;
  let page;
  const hops = [];
  for (let i = 0; i < 12 && next; i++) {
    const u = new URL(next);
    const cookies = [...jar].filter(([, c]) => c.host === u.host).map(([k, c]) => `${k}=${c.value}`).join('; ');
    const headers = cookies ? { Cookie: cookies } : {};
    const init = { redirect: 'manual', headers };
    if (post) {
      Object.assign(headers, { 'Content-Type': 'application/x-www-form-urlencoded', Origin: u.origin });
      Object.assign(init, { method: 'POST', body: post.toString() });
      post = undefined;
    }
    const r = await fetch(u, init);
    for (const sc of r.headers.getSetCookie()) {
      const [nv] = sc.split(';');
      const eq = nv.indexOf('=');
      jar.set(nv.slice(0, eq).trim(), { value: nv.slice(eq + 1), host: u.host });
    }
    hops.push(`${init.method ?? 'GET'} ${u.host} ${u.pathname} -> ${r.status}`);
    const loc = r.headers.get('location');
    next = r.status >= 300 && r.status < 400 && loc ? new URL(loc, u).toString() : '';
    if (!next) {
      page = await r.text();
      if (r.status === 200 && page.includes('<form method="post" action="/auth/start">')) {
        post = new URLSearchParams([...page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]));
        next = new URL('/auth/start', u).toString();
      }
    }
  }
  return { hops, page };
}

// check prints "ok   NAME", or "FAIL NAME" with what it saw and exits 1.
export function check(name, ok, seen) {
  if (ok) {
    console.log(`ok   ${name}`);
    return;
  }
  console.log(`FAIL ${name}`);
  if (seen !== undefined) console.error(typeof seen === 'string' ? seen : JSON.stringify(seen, null, 2));
  process.exit(1);
}

// oauthProvider is an OAuthClientProvider (both SDKs' shape) that keeps
// everything in memory, in saved: the registered client, the tokens, the
// PKCE verifier, the discovery state and the authorization URL the SDK
// sends the user to (saved.authorizationUrl); the redirect URI is never
// reached (the checks read the issuer's redirect).
export function oauthProvider(clientName, state) {
  const redirectUrl = 'http://127.0.0.1:1/callback';
  const saved = {};
  const provider = {
    get redirectUrl() { return redirectUrl; },
    get clientMetadata() {
      return { client_name: clientName, redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };
    },
    state: () => state,
    clientInformation: () => saved.client,
    saveClientInformation: (c) => { saved.client = c; },
    tokens: () => saved.tokens,
    saveTokens: (t) => { saved.tokens = t; },
    redirectToAuthorization: (u) => { saved.authorizationUrl = u; },
    saveCodeVerifier: (v) => { saved.verifier = v; },
    codeVerifier: () => saved.verifier,
    saveDiscoveryState: (s) => { saved.discovery = s; },
    discoveryState: () => saved.discovery,
  };
  return { provider, saved, redirectUrl };
}
