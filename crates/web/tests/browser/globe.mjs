// The Globe view in a real Chromium (Debian's /usr/bin/chromium, driven by playwright-core).
// Started by crates/web/tests/web/globe.rs with PERISCOPE_BASE (http://127.0.0.1:port), a
// signed-in session cookie (PERISCOPE_SESSION) and a directory for screenshots
// (PERISCOPE_ARTIFACTS). Exits non-zero on the first failed check.
//
// Every exposure request is recorded (`/app/exposure?q=…&resolution=…`); `inject` makes the
// next request of one resolution answer 503 or hang, or rewrites an answer.
import { chromium } from 'playwright-core';
import path from 'node:path';

const base = process.env.PERISCOPE_BASE;
const session = process.env.PERISCOPE_SESSION;
const artifacts = process.env.PERISCOPE_ARTIFACTS;
const origin = new URL(base).origin;

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

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const foreign = [];
const exposures = [];
const hanging = [];
let inject = null; // { resolution, mode: '503' | 'hang' | 'rewrite', rewrite? }
const answers = new Map();

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  await context.addCookies([{ name: 'periscope_session', value: session, url: base }]);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== origin) {
      foreign.push(url.href);
      return route.abort();
    }
    if (url.pathname !== '/app/exposure') return route.continue();
    const resolution = url.searchParams.get('resolution');
    exposures.push({ q: url.searchParams.get('q'), resolution });
    if (inject && inject.resolution === resolution) {
      const { mode, rewrite } = inject;
      if (mode === '503') {
        inject = null;
        return route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({
            title: 'Search capacity is full',
            message: 'Periscope is running as many searches as it can. Try again shortly.',
          }),
        });
      }
      if (mode === 'hang') {
        inject = null;
        hanging.push(route);
        return undefined;
      }
      if (mode === 'rewrite') {
        const response = await route.fetch();
        const json = rewrite(await response.json());
        answers.set(resolution, json);
        return route.fulfill({ response, json });
      }
    }
    const response = await route.fetch();
    const json = await response.json();
    answers.set(resolution, json);
    return route.fulfill({ response, json });
  });

  const section = page.locator('section.globe');
  const shown = () => section.getAttribute('data-shown');
  const current = () => page.locator('.globe-levels li[aria-current]').innerText();
  const clusters = () => page.locator('.globe-clusters tbody tr').allInnerTexts();
  const notice = () => page.locator('.globe-error').innerText();
  const levels = () => exposures.map((e) => e.resolution).join(',');
  // Red bubble pixels on the canvas: the clusters drawn.
  const bubblePixels = () => page.evaluate(() => {
    const c = document.querySelector('section.globe canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 150 && d[i + 1] < 140 && d[i + 2] < 140) n++;
    return n;
  });
  const canvasImage = () => page.evaluate(() => document.querySelector('section.globe canvas').toDataURL());

  // From Results to the Globe by its switch.
  await page.goto(`${base}/?q=port%3A443`);
  check(await page.locator('tr.host-row').count() === 25, 'port:443 opens in Results');
  await Promise.all([page.waitForNavigation(), page.click('nav.views a:text-is("Globe")')]);
  check(new URL(page.url()).searchParams.get('view') === 'globe', 'the switch opens the Globe');
  await until('Global detail', async () => (await shown()) === 'global');
  check(levels() === 'global', `the first request is Global detail (${levels()})`);
  check(exposures[0].q === 'port:443', 'for the prefixed query');
  check(/^[\d,]+ hosts, [\d,]+ services/.test(await page.locator('.globe-totals').innerText()),
    `the totals (${await page.locator('.globe-totals').innerText()})`);
  check(await current() === 'Global', 'the detail indicator says Global');
  await until('the land outlines', async () => (await page.evaluate(() => {
    const c = document.querySelector('section.globe canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === 0xc8 && d[i + 1] === 0xd3 && d[i + 2] === 0xc0) n++;
    return n;
  })) > 1000);
  check(await bubblePixels() > 50, 'clusters are drawn');
  const globalList = await clusters();
  check(globalList.length > 0, `the clusters in view are listed (${globalList.length})`);
  check(await page.locator('canvas[aria-label]').count() === 1, 'the canvas has an accessible name');
  check(!(await page.locator('.globe-bounded').isVisible()), 'complete locations: no bounded note');
  await page.screenshot({ path: path.join(artifacts, 'globe-global.png'), fullPage: true });

  // Labels: the dominant country's name and how many more, in this page's list; computed here
  // independently from the JSON the page received.
  // The browser's own English country names (Node's ICU may be another CLDR version).
  const names = Object.fromEntries(await page.evaluate((codes) => {
    const n = new Intl.DisplayNames(['en'], { type: 'region' });
    return codes.map((c) => [c, n.of(c)]);
  }, [...new Set(answers.get('global').locations.filter((l) => l.country_code).map((l) => l.country_code))]));
  const global = answers.get('global');
  const center = [10, 30]; // the globe's starting view (globe.js rotation)
  const rad = Math.PI / 180;
  const facing = (l) => Math.sin(l.latitude * rad) * Math.sin(center[1] * rad)
    + Math.cos(l.latitude * rad) * Math.cos(center[1] * rad) * Math.cos((l.longitude - center[0]) * rad) > 0.01;
  const listed = global.locations.filter(facing).sort((a, b) => b.unique_hosts - a.unique_hosts).slice(0, 50);
  const mixed = listed.find((l) => l.country_count > 1);
  check(mixed !== undefined, 'the synthetic index has a cluster spanning several countries');
  const mixedLabel = `${names[mixed.country_code]} +${mixed.country_count - 1} more`;
  check(globalList.some((row) => row.startsWith(`${mixedLabel}\t${mixed.unique_hosts.toLocaleString('en')}`)),
    `a cluster over ${mixed.country_count} countries reads "${mixedLabel}"`);
  const single = listed.find((l) => l.country_count === 1);
  check(globalList.some((row) => row.startsWith(`${names[single.country_code]}\t`)),
    `a cluster in one country reads "${names[single.country_code]}"`);
  check(globalList.every((row) => !/\d+\/\d+\/\d+/.test(row)), 'no label is a key');
  check(await page.evaluate(() => PeriscopeGlobe.label({ latitude: 51.5, longitude: -0.12 })) === '51.5° N, 0.1° W',
    'coordinates label a cluster without a country (51.5° N, 0.1° W)');

  // Keyboard: the arrows turn the globe.
  const before = await canvasImage();
  await page.focus('section.globe canvas');
  await page.keyboard.press('ArrowLeft');
  await until('the globe turns', async () => (await canvasImage()) !== before);
  check(true, 'ArrowLeft turns the globe');
  await page.keyboard.press('ArrowRight');
  await until('the globe turns back', async () => (await canvasImage()) === before);

  // Dragging turns it too.
  const box = await page.locator('section.globe canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 + 80, box.y + box.height / 2 + 30, { steps: 4 });
  await page.mouse.up();
  await until('the globe turns by dragging', async () => (await canvasImage()) !== before);
  check(true, 'dragging turns the globe');
  const dragged = await clusters();
  check(dragged.length > 0, 'the list follows the clusters in view');

  // Zoom in by the buttons: Regional is asked for past the threshold, once.
  await page.click('[data-zoom=in]');
  await sleep(300);
  check(levels() === 'global', 'one step in stays at Global detail');
  await page.click('[data-zoom=in]');
  await until('Regional detail', async () => (await shown()) === 'regional');
  check(levels() === 'global,regional', `zooming in asks for Regional detail (${levels()})`);
  check(await current() === 'Regional', 'the detail indicator says Regional');
  check(await bubblePixels() > 50, 'Regional clusters are drawn');
  await page.screenshot({ path: path.join(artifacts, 'globe-regional.png'), fullPage: true });

  // The wheel: Local.
  await page.hover('section.globe canvas');
  await page.mouse.wheel(0, -400);
  await until('Local detail', async () => (await shown()) === 'local');
  check(levels() === 'global,regional,local', `the wheel asks for Local detail (${levels()})`);
  check(await current() === 'Local', 'the detail indicator says Local');

  // Zooming back out reuses what was loaded.
  while (!(await page.locator('[data-zoom=out]').isDisabled())) await page.click('[data-zoom=out]');
  await until('Global detail again', async () => (await shown()) === 'global');
  await sleep(500);
  check(levels() === 'global,regional,local', `zooming out asks for nothing again (${levels()})`);
  check(JSON.stringify(await clusters()) === JSON.stringify(dragged), 'the Global clusters are back');
  check(await page.locator('[data-zoom=out]').isDisabled(), 'zoom out stops at the whole globe');

  // A finer level that fails: the Global map stays, the notice says why; zooming again retries.
  async function openGlobe(q) {
    exposures.length = 0;
    await page.goto(`${base}/?q=${encodeURIComponent(q)}&view=globe`);
    await until('Global detail', async () => (await shown()) === 'global');
  }
  await openGlobe('port:443');
  const list503 = await clusters();
  const totals503 = await page.locator('.globe-totals').innerText();
  inject = { resolution: 'regional', mode: '503' };
  await page.focus('section.globe canvas');
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await until('the error notice', async () => (await notice()).includes('Search capacity is full'));
  check(levels() === 'global,regional', 'Regional detail was asked for');
  check(await shown() === 'global' && await current() === 'Global', 'a failed Regional level leaves the Global map');
  check(await bubblePixels() > 50, 'the Global clusters are still drawn');
  check(await page.locator('.globe-totals').innerText() === totals503, 'the totals stay');
  check((await clusters()).length > 0, 'the clusters in view are still listed');
  check(await page.locator('.globe-error[role=alert]').count() === 1, 'the notice is an alert');
  await page.keyboard.press('-');
  await page.keyboard.press('-');
  await until('back to the whole globe', async () => JSON.stringify(await clusters()) === JSON.stringify(list503));
  check(true, 'zoomed out, the same Global clusters are listed');
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await until('Regional detail on retry', async () => (await shown()) === 'regional');
  check(levels() === 'global,regional,regional', `zooming again retries (${levels()})`);
  check((await notice()).trim() === '', 'the notice goes once the level loads');

  // A finer level that does not answer in time (the timeout shortened to 800 ms).
  await openGlobe('port:443');
  await page.evaluate(() => { document.querySelector('section.globe').dataset.timeoutMs = '800'; });
  inject = { resolution: 'regional', mode: 'hang' };
  await page.click('[data-zoom=in]');
  await page.click('[data-zoom=in]');
  await until('the loading indicator', () => page.locator('.globe-loading').isVisible(), 700);
  check(true, 'a loading indicator shows while Regional detail loads');
  await until('the timeout notice', async () => (await notice()).includes('Search timed out'), 5000);
  check(await shown() === 'global' && await current() === 'Global', 'a timed-out Regional level leaves the Global map');
  check(await bubblePixels() > 50 && (await clusters()).length > 0, 'the Global clusters are still drawn and listed');
  check(!(await page.locator('.globe-loading').isVisible()), 'the loading indicator is gone');
  await page.screenshot({ path: path.join(artifacts, 'globe-error.png'), fullPage: true });
  for (const route of hanging.splice(0)) await route.abort().catch(() => {});

  // A cluster without a country is labelled by its coordinates in the list.
  inject = {
    resolution: 'global',
    mode: 'rewrite',
    rewrite: (json) => {
      const most = Math.max(...json.locations.map((l) => l.unique_hosts));
      json.locations.unshift({ key: '4/8/5', latitude: 30.44, longitude: 10.26, unique_hosts: most + 1, service_count: 7 });
      json.locations_relation = 'bounded';
      return json;
    },
  };
  await openGlobe('port:443');
  inject = null;
  const first = (await clusters())[0] || '';
  check(first.startsWith('30.4° N, 10.3° E\t'), `a cluster without a country reads "30.4° N, 10.3° E" (${first})`);
  check(await page.locator('.globe-bounded').isVisible(), 'bounded locations: the note says only the 500 largest are drawn');

  // Another search in the Globe stays in the Globe, at Global detail.
  await page.click('[data-zoom=in]');
  await page.click('[data-zoom=in]');
  await until('Regional detail', async () => (await shown()) === 'regional');
  exposures.length = 0;
  await page.fill('input[name=q]', 'AS64894');
  await Promise.all([page.waitForNavigation(), page.click('form[role=search] button')]);
  await until('Global detail', async () => (await shown()) === 'global');
  check(await page.inputValue('input[name=q]') === 'asn:64894', 'the new search ran as asn:64894');
  check(levels() === 'global' && exposures[0].q === 'asn:64894', `the new search stays in the Globe at Global detail (${levels()})`);
  check(await current() === 'Global', 'the detail indicator says Global');

  // A domain search returns to Results.
  await page.fill('input[name=q]', 'domain:northwind.example');
  await Promise.all([page.waitForNavigation(), page.click('form[role=search] button')]);
  check(await page.locator('section.globe').count() === 0, 'a domain search returns to Results');
  check(await page.locator('nav.views').count() === 0, 'a domain search has no Globe switch');

  // Narrow screens: the Globe fits 390 px.
  await page.setViewportSize({ width: 390, height: 844 });
  await openGlobe('port:443');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  check(overflow <= 390, `the Globe fits 390 px (${overflow})`);
  check(await page.locator('[data-zoom=in]').isVisible(), 'the zoom buttons show at 390 px');
  await page.screenshot({ path: path.join(artifacts, 'globe-390.png'), fullPage: true });

  check(errors.length === 0, `no script error (${errors.join('; ')})`);
  check(foreign.length === 0, `no request left ${origin} (${foreign.join(', ')})`);
  await context.close();
} finally {
  await browser.close();
}
