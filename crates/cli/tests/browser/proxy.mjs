// Chromium (Debian's /usr/bin/chromium, driven by playwright-core) through nginx terminating
// TLS in front of `periscope serve`. Started by crates/cli/tests/proxy.rs with PERISCOPE_BASE
// (https://periscope.test:PORT, which the browser resolves to 127.0.0.1) and
// PERISCOPE_PLAYWRIGHT (the directory holding node_modules/playwright-core, installed by
// `npm ci --prefix crates/web/tests/browser`). Opens the application, then the sign-in page,
// submits a wrong password, and checks HSTS on every page and that every cookie is Secure.
// The Rust side then checks the audited client address. Exits non-zero on the first failure.
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.PERISCOPE_PLAYWRIGHT}/`);
const { chromium } = require('playwright-core');
const base = process.env.PERISCOPE_BASE;
const host = new URL(base).hostname;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--host-resolver-rules=MAP ${host} 127.0.0.1`],
});
try {
  // The test certificate is self-signed: the browser is told to accept it.
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const hsts = (response) => response.headers()['strict-transport-security'] || '';

  const home = await page.goto(`${base}/`);
  check(home.status() < 400, `the application answers through nginx (${home.status()})`);
  check(hsts(home).includes('max-age=31536000'), 'HSTS on the application page');

  const signin = await page.goto(`${base}/auth/signin`);
  check(signin.status() === 200, 'the sign-in page answers');
  check(hsts(signin).includes('max-age=31536000'), 'HSTS on the sign-in page');
  await page.fill('#email', 'nobody@example.com');
  await page.fill('#password', 'wrong-password');
  const [refused] = await Promise.all([
    page.waitForNavigation(),
    page.click('button[type=submit]'),
  ]);
  check(refused.status() === 401, `a wrong password is refused (${refused.status()})`);
  check(new URL(page.url()).protocol === 'https:', 'the form posted over https');

  const cookies = await context.cookies();
  check(cookies.length > 0, `cookies were set (${cookies.map((c) => c.name).join(', ')})`);
  for (const cookie of cookies) {
    check(cookie.secure, `cookie ${cookie.name} is Secure`);
  }
  console.log('DONE');
} finally {
  await browser.close();
}
