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
    if (inject && (inject.resolution === resolution || inject.resolution === '*')) {
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
  const keysListed = () => page.locator('.globe-clusters tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
  const centerOf = async () => (await section.getAttribute('data-center')).split(',').map(Number);
  const rad = Math.PI / 180;
  // Whether a location faces the viewer when the globe looks at `center` ([lon, lat]).
  const facingFrom = (center, l, margin = 0.01) => Math.sin(l.latitude * rad) * Math.sin(center[1] * rad)
    + Math.cos(l.latitude * rad) * Math.cos(center[1] * rad) * Math.cos((l.longitude - center[0]) * rad) > margin;
  // The host-weighted centroid of the locations on the unit sphere, computed here on its own.
  function centroidOf(locations) {
    let [x, y, z] = [0, 0, 0];
    for (const l of locations) {
      x += l.unique_hosts * Math.cos(l.latitude * rad) * Math.cos(l.longitude * rad);
      y += l.unique_hosts * Math.cos(l.latitude * rad) * Math.sin(l.longitude * rad);
      z += l.unique_hosts * Math.sin(l.latitude * rad);
    }
    return [Math.atan2(y, x) / rad, Math.atan2(z, Math.hypot(x, y)) / rad];
  }
  const near = (a, b, degrees) => Math.abs(a[1] - b[1]) <= degrees
    && Math.abs(((a[0] - b[0] + 540) % 360) - 180) <= degrees;
  // Where a location is drawn, in page coordinates: the projection rebuilt here from the
  // view the page reports (its centre and zoom), with the page's d3.
  const clientPoint = (location) => page.evaluate((l) => {
    const s = document.querySelector('section.globe');
    const c = s.querySelector('canvas');
    const [lon, lat] = s.dataset.center.split(',').map(Number);
    const p = d3.geoOrthographic().clipAngle(90).scale((c.width / 2 - 4) * Number(s.dataset.zoom))
      .translate([c.width / 2, c.height / 2]).rotate([-lon, -lat]);
    const [x, y] = p([l.longitude, l.latitude]);
    const box = c.getBoundingClientRect();
    return [box.left + x * box.width / c.width, box.top + y * box.height / c.height];
  }, location);
  const canvasCentre = async () => {
    const box = await page.locator('section.globe canvas').boundingBox();
    return [box.x + box.width / 2, box.y + box.height / 2];
  };
  const hostsText = (n, one, many) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
  const tip = page.locator('.globe-tip');

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
  // The globe turned to the data's centroid (host-weighted, on the sphere).
  const center = await centerOf();
  const expected = centroidOf(global.locations);
  check(near(center, expected, 0.01),
    `the Globe turns to the centroid of the hosts (${center} for ${expected.map((d) => d.toFixed(3))})`);
  const facing = (l) => facingFrom(center, l);
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
  check(await page.evaluate(() => [PeriscopeGlobe.count(1, 'host', 'hosts'), PeriscopeGlobe.count(19349, 'host', 'hosts')]
    .join('|')) === '1 host|19,349 hosts', 'counts agree in number and are grouped (1 host, 19,349 hosts)');
  const labelOf = (l) => (l.country_count > 1 ? `${names[l.country_code]} +${l.country_count - 1} more` : names[l.country_code]);

  // Over the map: the pointer on a bubble labels it with its counts.
  check(await tip.isHidden(), 'no label over the map at first');
  const target = listed[0];
  const [tx, ty] = await clientPoint(target);
  await page.mouse.move(tx, ty);
  await until('the label over the map', () => tip.isVisible());
  const tipKey = await tip.getAttribute('data-key');
  const hovered = global.locations.find((l) => l.key === tipKey);
  const tipText = (await tip.innerText()).split('\n').map((t) => t.trim()).filter(Boolean);
  check(hovered && tipText[0] === labelOf(hovered)
    && tipText[1] === `${hostsText(hovered.unique_hosts, 'host', 'hosts')}, ${hostsText(hovered.service_count, 'service', 'services')}`,
    `the pointer on a bubble labels it over the map (${tipText.join(' / ')})`);
  const tipBox = await tip.boundingBox();
  const stageBox = await page.locator('.globe-stage').boundingBox();
  check(tipBox.y >= stageBox.y && tipBox.y + tipBox.height <= stageBox.y + stageBox.height, 'the label is over the map');
  await page.mouse.move(5, 5);
  await until('the label goes', () => tip.isHidden());

  // A focused row labels its bubble over the map and marks its row.
  const firstRow = page.locator('.globe-clusters tbody tr').first();
  const rowKey = await firstRow.getAttribute('data-key');
  await firstRow.locator('a').focus();
  await until('the focused row\'s label', async () => (await tip.isVisible()) && (await tip.getAttribute('data-key')) === rowKey);
  check(await firstRow.evaluate((r) => r.classList.contains('marked')), 'focusing a row marks it and labels its bubble over the map');
  await page.locator('section.globe canvas').focus();
  await until('the label goes', () => tip.isHidden());


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

  // The wheel zooms toward the pointer: the place under it stays under it.
  const underKey = (await keysListed())[0];
  const under = global.locations.find((l) => l.key === underKey);
  const [wx, wy] = await clientPoint(under);
  await page.mouse.move(wx, wy);
  await page.mouse.wheel(0, -150);
  await until('the wheel zooms', async () => Number(await section.getAttribute('data-zoom')) > 1.2);
  await sleep(200);
  const [ax, ay] = await clientPoint(under);
  check(Math.hypot(ax - wx, ay - wy) < 2,
    `the wheel zooms toward the pointer (the cluster moved ${Math.hypot(ax - wx, ay - wy).toFixed(2)} px)`);
  check(await shown() === 'global', 'a small wheel step stays at Global detail');

  // Zoom in by the buttons: toward the largest cluster in view; Regional is asked for past
  // the threshold, once.
  const largestKey = (await keysListed())[0];
  const largest = global.locations.find((l) => l.key === largestKey);
  const [cx, cy] = await canvasCentre();
  const [lx, ly] = await clientPoint(largest);
  await page.click('[data-zoom=in]');
  await sleep(300);
  check(levels() === 'global', 'one step in stays at Global detail');
  const [nx, ny] = await clientPoint(largest);
  const offBefore = Math.hypot(lx - cx, ly - cy);
  const offAfter = Math.hypot(nx - cx, ny - cy);
  check(offAfter <= offBefore / 2 + 2 && (await keysListed()).includes(largestKey),
    `+ zooms toward the largest cluster in view (${offBefore.toFixed(0)} → ${offAfter.toFixed(0)} px from the centre)`);
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
  const globalKeys = new Set(answers.get('global').locations.map((l) => l.key));
  const back = await keysListed();
  check(back.length > 0 && back.every((k) => globalKeys.has(k)), 'the Global clusters are back');
  check(await page.locator('[data-zoom=out]').isDisabled(), 'zoom out stops at the whole globe');

  // Zooms in a step at a time until `level` is drawn. After each step it waits for the level
  // asked for to load and then for a frame, so the page has drawn what it loaded before the
  // level shown is read (a busy machine may hold a frame back; a step taken on the level
  // drawn before would zoom past `level`).
  async function zoomInTo(level) {
    while ((await shown()) !== level) {
      if (await page.locator('[data-zoom=in]').isDisabled()) {
        throw new Error(`check failed: zoomed all the way in, ${level} detail never drawn (${await shown()} is)`);
      }
      await page.click('[data-zoom=in]');
      await until(`${level} detail`, async () => !(await section.getAttribute('aria-busy')));
      await page.evaluate(() => new Promise((drawn) => window.requestAnimationFrame(() => drawn())));
    }
  }

  // A finer level that fails: the Global map stays, the notice says why; zooming again retries.
  async function openGlobe(q) {
    exposures.length = 0;
    await page.goto(`${base}/?q=${encodeURIComponent(q)}&view=globe`);
    await until('Global detail', async () => (await shown()) === 'global');
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await openGlobe('port:443');
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
  const seen = await page.evaluate(() => {
    const n = document.querySelector('.globe-error').getBoundingClientRect();
    const c = document.querySelector('section.globe canvas').getBoundingClientRect();
    return { top: n.top, bottom: n.bottom, height: window.innerHeight, over: n.top >= c.top && n.bottom <= c.bottom };
  });
  check(seen.top >= 0 && seen.bottom <= seen.height && seen.bottom > seen.top && seen.over,
    `at 1280x900 the notice is over the map, in view (${Math.round(seen.top)}–${Math.round(seen.bottom)} of ${seen.height})`);
  await page.screenshot({ path: path.join(artifacts, 'globe-error-900.png') });
  await page.keyboard.press('-');
  await page.keyboard.press('-');
  const keys503 = new Set(answers.get('global').locations.map((l) => l.key));
  await until('back to the whole globe', async () => (await section.getAttribute('data-zoom')) === '1'
    && (await keysListed()).length > 0 && (await keysListed()).every((k) => keys503.has(k)));
  check(true, 'zoomed out, Global clusters are listed');
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await until('Regional detail on retry', async () => (await shown()) === 'regional');
  check(levels() === 'global,regional,regional', `zooming again retries (${levels()})`);
  check((await notice()).trim() === '', 'the notice goes once the level loads');

  // A finer level that does not answer in time (the timeout shortened to 2 s).
  await openGlobe('port:443');
  await page.evaluate(() => { document.querySelector('section.globe').dataset.timeoutMs = '2000'; });
  inject = { resolution: 'regional', mode: 'hang' };
  await page.click('[data-zoom=in]');
  await page.click('[data-zoom=in]');
  await until('the loading indicator', () => page.locator('.globe-loading').isVisible(), 1500);
  check(true, 'a loading indicator shows while Regional detail loads');
  await until('the timeout notice', async () => (await notice()).includes('Search timed out'));
  check(await shown() === 'global' && await current() === 'Global', 'a timed-out Regional level leaves the Global map');
  check(await bubblePixels() > 50 && (await clusters()).length > 0, 'the Global clusters are still drawn and listed');
  check(!(await page.locator('.globe-loading').isVisible()), 'the loading indicator is gone');
  await page.screenshot({ path: path.join(artifacts, 'globe-error.png'), fullPage: true });
  for (const route of hanging.splice(0)) await route.abort().catch(() => {});
  await page.setViewportSize({ width: 1280, height: 1000 });

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

  // A cluster leads to its hosts: a filter search narrowed by the cluster's country (Enter on
  // its row, or a click on its bubble); a standalone search (ASN) to its own Results.
  await openGlobe('port:443');
  const row = page.locator('.globe-clusters tbody tr').first();
  const key = await row.getAttribute('data-key');
  const cluster = answers.get('global').locations.find((l) => l.key === key);
  await row.locator('a').focus();
  await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
  const narrowed = `port:443 country:${cluster.country_code}`;
  check(new URL(page.url()).searchParams.get('q') === narrowed && await page.inputValue('input[name=q]') === narrowed,
    `Enter on a cluster's row runs ${narrowed}`);
  check(await page.locator('tr.host-row').count() > 0, 'and lists its hosts');
  await openGlobe('port:443');
  const firstKey = (await keysListed())[0];
  const bubble = answers.get('global').locations.find((l) => l.key === firstKey);
  const [bx, by] = await clientPoint(bubble);
  await page.mouse.move(bx, by);
  await until('the label over the map', () => tip.isVisible());
  const clickedKey = await tip.getAttribute('data-key');
  const clickedCountry = answers.get('global').locations.find((l) => l.key === clickedKey).country_code;
  await Promise.all([page.waitForNavigation(), page.mouse.click(bx, by)]);
  check(new URL(page.url()).searchParams.get('q') === `port:443 country:${clickedCountry}`,
    `a click on a bubble runs port:443 country:${clickedCountry}`);

  // Data far from where the globe used to look (10° E, 30° N): the searched hosts are in view
  // at every level. One host in Sydney (an exact-IP Globe), then every host in Australia.
  const facingNow = async (l) => facingFrom(await centerOf(), l, 0);
  await openGlobe(process.env.PERISCOPE_SYDNEY_IP);
  const sydney = answers.get('global');
  check(sydney.locations.length === 1, 'one host, one cluster');
  check(await bubblePixels() > 20 && (await clusters()).length === 1, 'a host in Sydney is drawn and listed at Global detail');
  check(await facingNow(sydney.locations[0]), 'the host in Sydney faces the viewer');
  const services = sydney.service_count;
  check((await page.locator('.globe-totals').innerText()).startsWith(`1 host, ${hostsText(services, 'service', 'services')}`),
    `one host reads "1 host" (${await page.locator('.globe-totals').innerText()})`);
  await page.screenshot({ path: path.join(artifacts, 'globe-sydney.png') });
  const sydneyLink = await page.locator('.globe-clusters tbody tr a').first().getAttribute('href');
  check(new URL(sydneyLink, base).searchParams.get('q') === process.env.PERISCOPE_SYDNEY_IP
    && await section.getAttribute('data-add-country') === null,
    `an exact-IP search's cluster leads to its own Results (it takes no other clause): ${sydneyLink}`);
  for (const level of ['regional', 'local']) {
    await zoomInTo(level);
    check(await bubblePixels() > 20 && (await clusters()).length === 1, `the host in Sydney is drawn at ${level} detail`);
  }
  await openGlobe('country:AU');
  const australia = answers.get('global');
  check(near(await centerOf(), centroidOf(australia.locations), 0.01), 'country:AU: the Globe turns to the centroid of its hosts');
  for (const level of ['global', 'regional', 'local']) {
    await zoomInTo(level);
    const answer = answers.get(level);
    const keys = await keysListed();
    const inView = [];
    for (const k of keys) inView.push(await facingNow(answer.locations.find((l) => l.key === k)));
    check(await bubblePixels() > 20 && keys.length > 0 && inView.every(Boolean),
      `country:AU: ${keys.length} clusters drawn on the visible hemisphere at ${level} detail`);
  }
  await page.screenshot({ path: path.join(artifacts, 'globe-australia-local.png') });

  // Many clusters far from 10° E, 30° N: port:443's answers at every level squeezed into the
  // seas east of Australia (longitude 150 + lon/10, latitude −30 + lat/10).
  inject = {
    resolution: '*',
    mode: 'rewrite',
    rewrite: (json) => {
      for (const l of json.locations) {
        l.longitude = 150 + l.longitude / 10;
        l.latitude = -30 + l.latitude / 10;
      }
      return json;
    },
  };
  await openGlobe('port:443');
  const moved = answers.get('global');
  check(near(await centerOf(), centroidOf(moved.locations), 0.01), 'moved clusters: the Globe turns to their centroid');
  for (const level of ['global', 'regional', 'local']) {
    await zoomInTo(level);
    const keys = await keysListed();
    check(await bubblePixels() > 50 && keys.length > 1,
      `moved clusters: ${keys.length} drawn and listed at ${level} detail (of ${answers.get(level).locations.length})`);
  }
  inject = null;

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
