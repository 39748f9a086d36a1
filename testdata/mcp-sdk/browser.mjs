// The user's browser for the SDK checks: it follows a sign-in link with
// manual redirects and a cookie jar, submits serve's confirmation page
// (POST /auth/start) when one shows, and returns each hop
// ("METHOD HOST PATH -> STATUS") and the last page.
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
