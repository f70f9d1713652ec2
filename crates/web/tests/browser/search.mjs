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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, condition, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

// "1 host", "19,349 hosts": grouped by thousands, the noun agreeing with the number.
const counted = (n, one, many) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

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
  check(/^(About )?\d{1,3}(,\d{3})* hosts?$/.test(await page.locator('.total').innerText()),
    'the total loads on its own');
  const totalValue = page.locator('.total .total-value');
  const total = Number(await totalValue.getAttribute('data-value'));
  const approximate = (await totalValue.getAttribute('data-relation')) === 'approximate';
  check(await totalValue.innerText() === `${approximate ? 'About ' : ''}${counted(total, 'host', 'hosts')}`,
    `the total is grouped and agrees in number (${await totalValue.innerText()})`);
  // Where the page is among the hosts, in the note above the list and beside the page links.
  async function expectedRange(pageNumber) {
    const rows = await page.locator('tr.host-row').count();
    const first = (pageNumber - 1) * 25 + 1;
    const last = first + rows - 1;
    const more = await page.locator('a[rel=next]').count() > 0;
    let of;
    if (!more) of = last.toLocaleString('en');
    else if (total > last) of = `${approximate ? 'about ' : ''}${total.toLocaleString('en')}`;
    else of = `more than ${last.toLocaleString('en')}`;
    const hosts = first === last ? `Host ${first.toLocaleString('en')}`
      : `Hosts ${first.toLocaleString('en')}–${last.toLocaleString('en')}`;
    return `${hosts} of ${of}`;
  }
  const range1 = await expectedRange(1);
  await until(`"${range1}"`, async () => (await page.locator('.page-range').allInnerTexts())
    .every((t) => t === range1));
  check((await page.locator('.page-range').count()) === 2, `the page says where it is: "${range1}" (above the list and beside the page links)`);
  await page.locator('section.facets .facet-group').first().waitFor();
  check(await page.locator('section.facets .facet-group').count() === 6,
    'Suggested Filters load with six groups');
  check(await page.locator('section.facets a.facet.applied').count() >= 1,
    'the port:443 value is labelled Applied');
  const counts = await page.locator('section.facets .facet .count').allInnerTexts();
  check(counts.length > 0 && counts.every((t) => {
    const m = /^(About )?(\d{1,3}(?:,\d{3})*) (hosts?)$/.exec(t);
    return m && (m[3] === 'host') === (Number(m[2].replace(/,/g, '')) === 1);
  }), `every suggested value's count is grouped and agrees in number (${counts.slice(0, 4).join('; ')}…)`);
  const countries = await page.locator('section.facets [data-field=country] .facet').evaluateAll((items) => {
    const names = new Intl.DisplayNames(['en'], { type: 'region' });
    return items.map((item) => [item.querySelector('.value').textContent,
      (item.querySelector('.country-name') || {}).textContent, names.of(item.querySelector('.value').textContent)]);
  });
  check(countries.length > 0 && countries.every(([, shown, name]) => shown === name),
    `country values show the name beside the code (${countries.map(([c, n]) => `${c} ${n}`).join(', ')})`);
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
  const range2 = await expectedRange(2);
  await until(`"${range2}"`, async () => (await page.locator('.page-range').allInnerTexts())
    .every((t) => t === range2));
  check(range2.startsWith('Hosts 26–'), `page 2 says "${range2}"`);
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

  // At a phone's width the panel opens where the user is, not below the 25 rows: a sheet over
  // the foot of the screen, the chosen row (here the last) kept in view above it.
  await page.goto(base + '/?q=' + encodeURIComponent('port:443') + '&page=1');
  const deep = page.locator('a.host-link').last();
  await deep.scrollIntoViewIfNeeded();
  await deep.click();
  await panel.locator('section.host').waitFor();
  await sleep(100);
  const where = await page.evaluate(() => {
    const p = document.querySelector('aside.host-panel').getBoundingClientRect();
    const r = document.querySelector('tr.host-row.selected').getBoundingClientRect();
    return { top: p.top, bottom: p.bottom, width: p.width, rowTop: r.top, rowBottom: r.bottom, height: window.innerHeight };
  });
  check(where.width <= 390, 'at 390 px the panel fits the screen');
  check(where.top >= 0 && where.top < where.height * 0.6 && where.bottom <= where.height + 1,
    `at 390 px the panel opens in view (${Math.round(where.top)}–${Math.round(where.bottom)} of ${where.height})`);
  check(where.rowTop >= 0 && where.rowBottom <= where.top + 1,
    `the chosen row stays in view above the panel (${Math.round(where.rowTop)}–${Math.round(where.rowBottom)})`);
  await shot(page, 'phone-panel');
  if (artifacts) await page.screenshot({ path: path.join(artifacts, 'phone-panel-in-view.png') });
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
