// The search page in a real Chromium (Debian's /usr/bin/chromium, driven by playwright-core).
// Started by crates/web/tests/web/browser.rs with PERISCOPE_BASE (http://127.0.0.1:port), a
// signed-in session cookie (PERISCOPE_SESSION), an exact address with a stored host
// (PERISCOPE_IP), the banner text (PERISCOPE_BANNER) and where screenshots go
// (PERISCOPE_ARTIFACTS). It asks the Rust side questions on stdout (`ASK allowance`: searches
// charged today; `ASK expire`: end the session by idling) and reads the answers on stdin.
// Exits non-zero on the first failed check.
import { chromium } from 'playwright-core';
import readline from 'node:readline';
import path from 'node:path';

const base = process.env.PERISCOPE_BASE;
const session = process.env.PERISCOPE_SESSION;
const ip = process.env.PERISCOPE_IP;
const banner = process.env.PERISCOPE_BANNER;
const artifacts = process.env.PERISCOPE_ARTIFACTS;
const origin = new URL(base).origin;

const answers = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function ask(question) {
  console.log(`ASK ${question}`);
  const { value } = await answers.next();
  return value;
}
const allowance = async () => Number(await ask('allowance'));

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

async function shot(page, name) {
  if (!artifacts) return;
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot: ${file}`);
}

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const foreign = [];
const requests = [];
// While set, the panel's fragment is held back a little, so its loading state can be seen.
let slowPanel = false;

async function open(javaScriptEnabled, viewport) {
  const context = await browser.newContext({ javaScriptEnabled, viewport });
  await context.addCookies([{ name: 'periscope_session', value: session, url: base }]);
  const page = await context.newPage();
  // Every request the page makes is recorded; anything not for the server is refused.
  await page.route('**/*', async (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin) {
      foreign.push(url);
      return route.abort();
    }
    requests.push(url);
    if (slowPanel && url.includes('/app/host?')) await new Promise((r) => setTimeout(r, 500));
    return route.continue();
  });
  return { context, page };
}

try {
  // ---- Without script: the list, links and the plain Add filter form work. ----
  {
    const { context, page } = await open(false, { width: 1280, height: 900 });
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
    check(await page.locator('form.filter-form').isVisible(), 'no script: the Add filter form is on the page');
    const first = await page.locator('tr.host-row td:first-child').allInnerTexts();
    await Promise.all([page.waitForNavigation(), page.click('a[rel=next]')]);
    const second = await page.locator('tr.host-row td:first-child').allInnerTexts();
    check(second.length > 0 && second[0] !== first[0], 'the next page lists other hosts');
    check(await page.inputValue('input[name=q]') === 'port:443', 'the next page keeps the query');
    await Promise.all([page.waitForNavigation(), page.click('a[rel=prev]')]);
    check((await page.locator('tr.host-row td:first-child').allInnerTexts())[0] === first[0],
      'no script: the previous page shows page 1 again');
    const link = page.locator('a.host-link').first();
    const rowIp = await link.innerText();
    await Promise.all([page.waitForNavigation(), link.click()]);
    check(await page.locator(`section.host[aria-label="Host ${rowIp}"]`).count() === 1,
      'no script: a host address links to its exact-IP view');
    await page.goBack();
    await page.selectOption('#filter-field', 'port');
    await page.fill('#filter-value', 'seventy');
    await Promise.all([page.waitForNavigation(), page.click('form.filter-form button[type=submit]')]);
    check((await page.locator('.filter-error').innerText()).startsWith('Invalid port'),
      'no script: the server refuses an invalid port in the spec\'s words');
    check(await page.inputValue('#filter-value') === 'seventy', 'no script: the input is kept');
    await context.close();
  }

  // ---- With script. ----
  const { context, page } = await open(true, { width: 1280, height: 900 });
  await page.goto(base + '/?q=' + encodeURIComponent('port:443'));
  check(new URL(page.url()).searchParams.get('page') === '1',
    'the first page gets its number, so Back returns to it');
  await page.locator('.total .total-value, .total .total-unavailable').waitFor();
  check(/^(About )?\d+ hosts?$/.test(await page.locator('.total').innerText()),
    'the total loads on its own');
  await page.locator('section.facets .facet-group').first().waitFor();
  check(await page.locator('section.facets .facet-group').count() === 6,
    'Suggested Filters load with six groups');
  check(await page.locator('section.facets a.facet.applied').count() >= 1,
    'the port:443 value is labelled Applied');
  await shot(page, 'suggested-filters');

  // The Selected host panel: click, full inventory, Escape closes, focus returns.
  const firstLink = page.locator('a.host-link').first();
  const firstIp = await firstLink.innerText();
  slowPanel = true;
  await firstLink.click();
  const panel = page.locator('aside.host-panel');
  check(await panel.getAttribute('aria-busy') === 'true'
    && (await panel.evaluate((el) => getComputedStyle(el.querySelector('.panel-body'), '::after').content))
      .includes('Loading'), 'the panel shows that it is loading');
  await panel.locator(`section.host[aria-label="Host ${firstIp}"]`).waitFor();
  check(await panel.isVisible(), 'selecting a host opens the Selected host panel');
  slowPanel = false;
  check(await panel.getAttribute('aria-busy') === null, 'the panel is no longer busy');
  check(await panel.locator('tr.service').count() >= 1, 'the panel lists the host\'s services');
  check(await page.evaluate(() => document.activeElement.closest('aside.host-panel') !== null),
    'focus moves into the panel');
  check(page.url().includes('q=port%3A443'), 'the panel opened without leaving the page');
  await shot(page, 'host-list-with-panel');
  await page.keyboard.press('Escape');
  check(await panel.isHidden(), 'Escape closes the panel');
  check(await page.evaluate(() => document.activeElement.classList.contains('host-link')),
    'focus returns to the host');
  // By keyboard: Enter on a focused address.
  await page.locator('a.host-link').nth(1).focus();
  await page.keyboard.press('Enter');
  await panel.locator('section.host').waitFor();
  check(await panel.isVisible(), 'Enter on a host opens the panel');
  await page.keyboard.press('Escape');

  // Next, then previous page: previous costs nothing.
  const before = await allowance();
  const page1 = await page.locator('a.host-link').first().innerText();
  await Promise.all([page.waitForNavigation(), page.click('a[rel=next]')]);
  const afterNext = await allowance();
  check(afterNext === before + 1, `the next page is one charged search (${before} → ${afterNext})`);
  await Promise.all([page.waitForNavigation(), page.click('a[rel=prev]')]);
  check(await page.locator('a.host-link').first().innerText() === page1, 'previous shows page 1 again');
  await page.goBack();
  await page.goBack();
  check(await page.locator('a.host-link').first().innerText() === page1, 'Back shows page 1 again');
  check(await allowance() === afterNext, 'previous page costs nothing');

  // Add filter: an invalid value is refused in the browser, nothing is sent.
  await page.goto(base + '/?q=' + encodeURIComponent('port:443'));
  const dialog = page.locator('dialog.filter-dialog');
  check(await dialog.isHidden(), 'with script the form waits behind the Add filter button');
  await page.click('button.open-filter');
  check(await dialog.isVisible(), 'Add filter opens the dialog');
  check(await page.evaluate(() => document.querySelector('dialog.filter-dialog').matches(':modal')),
    'the dialog is modal');
  await page.selectOption('#filter-field', 'country');
  check(await page.locator('#filter-protocol').isHidden(), 'only the country input is shown');
  await page.fill('#filter-value', 'Germany');
  const sentBefore = requests.filter((u) => u.includes('/filter?')).length;
  await page.click('form.filter-form button[type=submit]');
  check((await page.locator('.filter-error').innerText()).startsWith('Invalid country'),
    'an invalid country is refused in the spec\'s words');
  await shot(page, 'filter-dialog');
  await page.selectOption('#filter-field', 'port');
  await page.fill('#filter-value', '22');
  await page.click('form.filter-form button[type=submit]');
  check((await page.locator('.filter-error').innerText()).startsWith('Field already used'),
    'a field already used is refused');
  check(requests.filter((u) => u.includes('/filter?')).length === sentBefore,
    'nothing was sent for an invalid filter');
  await page.selectOption('#filter-field', 'protocol');
  await page.selectOption('#filter-protocol', 'https');
  await Promise.all([page.waitForNavigation({ url: /q=port%3A443\+protocol%3Ahttps/ }),
    page.click('form.filter-form button[type=submit]')]);
  check(await page.inputValue('input[name=q]') === 'port:443 protocol:https',
    'a valid filter reruns the search at once with the clause added');

  // Suggested Filters: an Applied value removes its clause and reruns.
  await page.locator('section.facets .facet-group').first().waitFor();
  await Promise.all([page.waitForNavigation(),
    page.click('section.facets [data-field=protocol] a.facet.applied')]);
  check(await page.inputValue('input[name=q]') === 'port:443',
    'selecting an Applied value removes its clause');

  // Three filters: the dialog and the panel ask to remove one.
  await page.goto(base + '/?q=' + encodeURIComponent('port:443 protocol:https exploit:no'));
  await page.click('button.open-filter');
  check((await page.locator('dialog.filter-dialog .filter-full').innerText())
    .includes('Remove a filter before adding another'), 'three filters: the dialog asks to remove one');
  await page.keyboard.press('Escape');
  await page.locator('section.facets .facets-full, section.facets .facets-status').first().waitFor();
  check(await page.locator('section.facets .facets-full').count() === 1,
    'three filters: Suggested Filters ask to remove one');
  check(await page.locator('ul.chips li.chip').count() === 3, 'one chip per active filter');

  // The host view.
  await page.goto(base + '/?q=' + encodeURIComponent(ip));
  check(await page.locator('dd.caution').count() === 1 || await page.locator('section.host').count() === 1,
    'the exact-IP host view');
  await shot(page, 'host-view');

  // At a phone's width nothing scrolls sideways: the empty search page, a results page, the
  // host view.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const path of ['/', '/?q=' + encodeURIComponent('port:443') + '&page=1',
    '/?q=' + encodeURIComponent(ip)]) {
    await page.goto(base + path);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    const wide = width <= 390 ? '' : await page.evaluate(() => [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > 390)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}`).slice(0, 8).join(' '));
    check(width <= 390, `${path} fits 390 px (${width}${wide ? `: ${wide}` : ''})`);
  }

  // At a phone's width the panel opens below the list.
  await page.goto(base + '/?q=' + encodeURIComponent('port:443') + '&page=1');
  await page.locator('a.host-link').first().click();
  await panel.locator('section.host').waitFor();
  const box = await panel.boundingBox();
  check(box && box.width <= 390, 'at 390 px the panel fits the screen');
  await shot(page, 'phone-panel');
  await page.keyboard.press('Escape');

  // The session ends mid-search: the next fragment reloads the page, which says so.
  check(await ask('expire') === 'expired', 'the session is made to idle out');
  await Promise.all([page.waitForNavigation(), page.locator('a.host-link').first().click()]);
  await page.locator('main h1').waitFor();
  check((await page.locator('main h1').innerText()) === 'Your session expired',
    'after the session ended the page says "Your session expired"');

  check(foreign.length === 0, `no request left ${origin} (${foreign.join(', ')})`);
  await context.close();
} finally {
  await browser.close();
  answers.return?.();
  process.stdin.destroy();
}
