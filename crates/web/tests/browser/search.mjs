// The search page in a real Chromium (Debian's /usr/bin/chromium, driven by playwright-core).
// Started by crates/web/tests/web/browser.rs with PERISCOPE_BASE (http://127.0.0.1:port), a
// signed-in session cookie (PERISCOPE_SESSION), an exact address with a stored host
// (PERISCOPE_IP) and the banner text (PERISCOPE_BANNER). Exits non-zero on the first failed check.
import { chromium } from 'playwright-core';

const base = process.env.PERISCOPE_BASE;
const session = process.env.PERISCOPE_SESSION;
const ip = process.env.PERISCOPE_IP;
const banner = process.env.PERISCOPE_BANNER;
const origin = new URL(base).origin;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const foreign = [];
try {
  const context = await browser.newContext({ javaScriptEnabled: false });
  await context.addCookies([{ name: 'periscope_session', value: session, url: base }]);
  const page = await context.newPage();
  // Every request the page makes is recorded; anything not for the server is refused.
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin) {
      foreign.push(url);
      return route.abort();
    }
    return route.continue();
  });

  await page.goto(base + '/');
  check((await page.locator('.banner').innerText()).trim() === banner, 'the preview banner');
  check(await page.locator('form[role=search] input[name=q]').count() === 1, 'the search bar');

  async function search(entry) {
    await page.fill('input[name=q]', entry);
    await Promise.all([page.waitForNavigation(), page.click('form[role=search] button')]);
    return page.inputValue('input[name=q]');
  }

  check(await search(ip) === ip, `${ip} runs an exact-IP search`);
  check(await page.locator(`section.host[aria-label="Host ${ip}"]`).count() === 1,
    'the exact IP shows the host view');
  check(await page.locator('tr.host-row').count() === 0, 'no intermediate result row');

  check(await search('AS64894') === 'asn:64894', 'AS64894 becomes asn:64894');
  check(await search(`https://${ip}/login?x=1`) === ip, 'a pasted URL searches its host');

  check(await search('port:443') === 'port:443', 'a filter query keeps its prefixed form');
  check(await page.locator('tr.host-row').count() === 25, 'the first page lists 25 hosts');
  const first = await page.locator('tr.host-row td:first-child').allInnerTexts();
  await Promise.all([page.waitForNavigation(), page.click('a[rel=next]')]);
  const second = await page.locator('tr.host-row td:first-child').allInnerTexts();
  check(second.length > 0 && second[0] !== first[0], 'the next page lists other hosts');
  check(await page.inputValue('input[name=q]') === 'port:443', 'the next page keeps the query');

  check(foreign.length === 0, `no request left ${origin} (${foreign.join(', ')})`);
  await context.close();
} finally {
  await browser.close();
}
