// drive.mjs opens a page in headless Chromium (Debian's /usr/bin/chromium,
// or $CHROMIUM) with the MCP endpoint in its query and a token in
// window.mcpToken, waits for the page to finish (window.done) and prints
// the lines it wrote (window.results), one per line. Chromium itself
// enforces CORS: a request serve does not allow fails in the page.
//
// Usage: node drive.mjs PAGE_URL MCP_URL TOKEN_FILE
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';

const [pageURL, mcp, tokenFile] = process.argv.slice(2);
if (!pageURL || !mcp || !tokenFile) {
  console.error('usage: node drive.mjs PAGE_URL MCP_URL TOKEN_FILE');
  process.exit(2);
}
const token = readFileSync(tokenFile, 'utf8').trim();
// The flags keep Chromium off the network it would reach by itself (this
// machine has none beyond loopback) and work as root (--no-sandbox).
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error' && m.text().includes('CORS')) errors.push(m.text()); });
  await page.addInitScript((t) => { window.mcpToken = t; }, token);
  const u = new URL(pageURL);
  u.searchParams.set('mcp', mcp);
  await page.goto(u.toString());
  await page.waitForFunction(() => window.done === true, null, { timeout: 30000 });
  for (const line of await page.evaluate(() => window.results)) console.log(line);
  // Chromium's own account of a request CORS refused.
  for (const e of errors) console.log('console: ' + e);
} finally {
  await browser.close();
}
