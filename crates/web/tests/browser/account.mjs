// The account menu and the pages behind it in a real Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core). Started by crates/web/tests/web/account.rs with PERISCOPE_BASE
// (http://127.0.0.1:port), a signed-in session cookie (PERISCOPE_SESSION) whose account has run
// one search today, the banner text (PERISCOPE_BANNER) and PERISCOPE_ARTIFACTS (where the
// screenshots go). It prints "key: <key>" once it has created and copied a key, and waits for a
// line on standard input (the test has used the key) before revoking it. Exits non-zero on the
// first failed check.
import { chromium } from 'playwright-core';
import { createInterface } from 'node:readline';

const base = process.env.PERISCOPE_BASE;
const session = process.env.PERISCOPE_SESSION;
const banner = process.env.PERISCOPE_BANNER;
const artifacts = process.env.PERISCOPE_ARTIFACTS;
const origin = new URL(base).origin;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const foreign = [];

// Every request a page makes is recorded; anything not for the server is refused.
async function guard(page) {
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin) {
      foreign.push(url);
      return route.abort();
    }
    return route.continue();
  });
}

async function shot(page, name) {
  const path = `${artifacts}/${name}.png`;
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
}

/// Presses Tab until the focused element matches `selector` (at most `max` times).
async function tabTo(page, selector, max = 25) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) {
      return true;
    }
  }
  return false;
}

try {
  const context = await browser.newContext({
    timezoneId: 'Asia/Tokyo',
    locale: 'en-GB',
    viewport: { width: 1280, height: 800 },
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await context.addCookies([{ name: 'periscope_session', value: session, url: base }]);
  const page = await context.newPage();
  await guard(page);

  // The menu, opened with the keyboard; the ring and the reset time in Tokyo.
  await page.goto(base + '/');
  check((await page.locator('.banner').innerText()).trim() === banner, 'the preview banner');
  const menu = page.locator('details.menu');
  check(await tabTo(page, 'details.menu > summary'), 'Tab reaches the account menu');
  await page.keyboard.press('Enter');
  check(await menu.evaluate((d) => d.open), 'Enter opens the account menu');
  const ringText = (await page.locator('.ring .ring-text').innerText()).trim();
  check(ringText === '19 of 20 searches left today', `the ring says "${ringText}"`);
  check(await page.locator('.ring svg circle').count() === 2, 'the ring is drawn');
  const reset = (await page.locator('.ring time').innerText()).trim();
  check(reset === '09:00 (Asia/Tokyo)', `the reset time in the viewer's zone: "${reset}"`);
  await shot(page, 'account-menu');
  await page.keyboard.press('Escape');
  check(!(await menu.evaluate((d) => d.open)), 'Escape closes the menu');
  check(await page.evaluate(() => document.activeElement.matches('details.menu > summary')),
    'the focus returns to the menu');

  // Report a problem, reached from the menu by keyboard.
  await page.keyboard.press('Enter');
  check(await tabTo(page, 'details.menu a[href="/report-a-problem"]'), 'Tab reaches "Report a problem"');
  await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
  check(new URL(page.url()).pathname === '/report-a-problem', 'the report form opens');
  const counter = page.locator('#report-count');
  check((await counter.innerText()).trim() === '0 of 4,000 characters', 'the counter starts at 0');
  await page.locator('#description').focus();
  const report = 'The Globe did not load.\nSteps: search port:443, open Globe.';
  await page.keyboard.type(report);
  const counted = (await counter.innerText()).trim();
  check(counted === `${[...report].length} of 4,000 characters`, `the counter follows the typing: "${counted}"`);
  await shot(page, 'report-a-problem');
  await Promise.all([page.waitForNavigation(), page.click('form.report button[type=submit]')]);
  check((await page.locator('h1').innerText()).trim() === 'Report received', 'the report is received');
  check((await page.locator('main').innerText()).includes('Reports receive no individual reply.'),
    'no reply is promised');

  // API access: create a key, copy it, let the test use it, revoke it.
  await page.goto(base + '/api-access');
  await page.fill('#key-name', 'chromium');
  await Promise.all([page.waitForNavigation(), page.click('form.create-key button[type=submit]')]);
  const key = (await page.locator('#new-key').innerText()).trim();
  check(/^psk_[0-9A-Za-z]{38}$/.test(key), 'the new key is shown');
  const copy = page.locator('button[data-copy]');
  check(await copy.isVisible(), 'the copy button is there with script');
  await copy.click();
  await page.locator('#copy-status', { hasText: 'Copied' }).waitFor();
  check(true, 'the page says "Copied"');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check(copied === key, 'the clipboard holds the key');
  await shot(page, 'api-access-new-key');
  console.log(`key: ${key}`);
  const used = await lines.next();
  check(!used.done && used.value.trim() === 'used', 'the test used the key');

  await page.goto(base + '/api-access');
  check(!(await page.content()).includes(key), 'the key is not shown again');
  const row = page.locator('tr.key', { hasText: 'chromium' });
  check((await row.locator('code').innerText()).trim() === `${key.slice(0, 12)}…`, 'the list shows the prefix');
  check(!(await row.innerText()).includes('Never'), 'the list shows the last use');
  await Promise.all([page.waitForNavigation(), row.locator('a.revoke').click()]);
  check((await page.locator('h1').innerText()).trim() === 'Revoke this key?', 'revoking asks first');
  await Promise.all([page.waitForNavigation(), page.click('button.danger')]);
  check((await page.locator('.notice').innerText()).includes('is revoked'), 'the key is revoked');
  check((await row.innerText()).includes('Revoked'), 'the list says revoked');
  console.log('revoked: yes');

  // A phone's width: these pages fit without scrolling sideways, and the open menu stays on
  // the screen.
  await page.setViewportSize({ width: 390, height: 800 });
  for (const path of ['/api-access', '/report-a-problem', '/quickstart', '/release-notes']) {
    await page.goto(base + path);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    const wide = width <= 390 ? '' : await page.evaluate(() => [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > 390)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}`).slice(0, 8).join(' '));
    check(width <= 390, `${path} fits 390 px (${width}${wide ? `: ${wide}` : ''})`);
  }
  await page.goto(base + '/');
  await page.locator('details.menu > summary').click();
  const box = await page.locator('details.menu nav').boundingBox();
  check(box && box.x >= 0 && box.x + box.width <= 390, `the menu fits 390 px (${box && box.x}..${box && box.x + box.width})`);
  await shot(page, 'account-menu-390');
  await context.close();

  // The public pages without a session: a "Sign in" link, no menu.
  const anonymous = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const pub = await anonymous.newPage();
  await guard(pub);
  for (const [path, heading] of [['/quickstart', 'Quickstart'], ['/release-notes', 'Release notes']]) {
    const response = await pub.goto(base + path);
    check(response.status() === 200, `${path} answers without a session`);
    check((await pub.locator('h1').innerText()).trim() === heading, `${path} shows "${heading}"`);
    check((await pub.locator('.banner').innerText()).trim() === banner, `${path} has the banner`);
    const signIn = await pub.locator('header a.signin').getAttribute('href');
    check(signIn === `/signin?return_to=${encodeURIComponent(path)}`, `${path} offers "Sign in" back to it (${signIn})`);
    check(await pub.locator('details.menu').count() === 0, `${path} has no account menu`);
  }
  await pub.goto(base + '/quickstart');
  check(await pub.locator('code.curl').count() === 8, 'the quickstart has a command per route');
  await shot(pub, 'quickstart');
  await pub.goto(base + '/terms');
  check(new URL(pub.url()).pathname === '/auth/terms', '/terms shows the sign-in service\'s terms');
  check((await pub.locator('.banner').innerText()).trim() === banner, 'the terms have the banner');
  await anonymous.close();

  check(foreign.length === 0, `no request left ${origin} (${foreign.join(', ')})`);
} finally {
  input.close();
  await browser.close();
}
