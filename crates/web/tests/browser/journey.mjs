// A newcomer's whole journey in a real Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core), with no session handed in: the browser itself registers through the
// sign-in service's pages, confirms the address, chooses a password, signs in through the
// application, searches, opens a host and signs out. Started by
// crates/web/tests/web/journey_browser.rs with PERISCOPE_BASE (http://127.0.0.1:port),
// PERISCOPE_EMAIL and PERISCOPE_PASSWORD (the newcomer's), the banner text (PERISCOPE_BANNER)
// and where screenshots go (PERISCOPE_ARTIFACTS). It asks the Rust side questions on stdout
// (`ASK link <email>`: the confirmation link of the e-mail sent to that address; `ASK
// allowance`: searches charged today) and reads the answers on stdin. Exits non-zero on the
// first failed check.
import { chromium } from 'playwright-core';
import readline from 'node:readline';
import path from 'node:path';

const base = process.env.PERISCOPE_BASE;
const email = process.env.PERISCOPE_EMAIL;
const password = process.env.PERISCOPE_PASSWORD;
const banner = process.env.PERISCOPE_BANNER;
const artifacts = process.env.PERISCOPE_ARTIFACTS;
const origin = new URL(base).origin;
const organisation = 'Newcomer Networks Ltd';

const answers = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function ask(question) {
  console.log(`ASK ${question}`);
  const { value } = await answers.next();
  return value;
}

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

const here = (page) => new URL(page.url()).pathname;
const heading = async (page) => (await page.locator('h1').first().innerText()).trim();
const bannerShown = async (page) => (await page.locator('.banner').innerText()).trim() === banner;

const browser = await chromium.launch({
  executablePath: process.env.PERISCOPE_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const foreign = [];
const requests = [];

try {
  const context = await browser.newContext({
    javaScriptEnabled: true,
    viewport: { width: 1280, height: 900 },
  });
  // Every request of every page of the context (the terms tab too) is recorded; anything not
  // for the server is refused.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin !== origin) {
      foreign.push(url);
      return route.abort();
    }
    requests.push(url);
    return route.continue();
  });
  const page = await context.newPage();
  const menu = page.locator('details.menu');
  const ring = page.locator('details.menu .ring .ring-text');
  async function openMenu() {
    if (!(await menu.evaluate((d) => d.open))) await page.click('details.menu > summary');
    await ring.waitFor();
    return (await ring.innerText()).trim();
  }
  async function closeMenu() {
    if (await menu.evaluate((d) => d.open)) await page.click('details.menu > summary');
  }

  // ---- 1. A newcomer: "Sign in to search", then the provider, then registration. ----
  await page.goto(base + '/');
  check(await bannerShown(page), 'the preview banner');
  check(await heading(page) === 'Sign in to search', '/ says "Sign in to search"');
  check(await page.locator('details.menu').count() === 0, 'no account menu before signing in');
  await Promise.all([page.waitForURL(/\/auth\/signin/), page.click('main a:text-is("Sign in")')]);
  check(here(page) === '/auth/signin' && await heading(page) === 'Sign in to Periscope',
    'Sign in leads to the provider\'s sign-in page');
  check(await bannerShown(page), 'the provider\'s page carries the banner');
  await Promise.all([page.waitForURL(/\/auth\/register/),
    page.getByRole('link', { name: 'Register', exact: true }).click()]);
  check(await heading(page) === 'Create your Periscope account', 'the sign-in page links to registration');
  const terms = page.locator('#terms');
  check(!(await terms.isChecked()), 'the terms box starts unticked');

  // The terms link opens in a new tab (target=_blank); if it ever opens here, come back.
  const link = page.locator('label[for=terms] a');
  const opened = context.waitForEvent('page', { timeout: 15000 }).catch(() => null);
  await link.click();
  const tab = await opened;
  if (tab) {
    await tab.waitForLoadState();
    check(new URL(tab.url()).pathname === '/auth/terms'
      && (await tab.locator('h1').first().innerText()).trim() === 'Terms of service',
      'the terms link opens the terms of service in a new tab');
    await tab.close();
  } else {
    check(here(page) === '/auth/terms' && await heading(page) === 'Terms of service',
      'the terms link opens the terms of service');
    await page.goBack();
  }
  check(here(page) === '/auth/register' && !(await terms.isChecked()),
    'after reading the terms the box is still unticked');

  await page.fill('#email', email);
  await page.fill('#organisation', organisation);
  await terms.check();
  await shot(page, 'registration-form');
  await Promise.all([page.waitForNavigation(), page.click('form button[type=submit]')]);
  check(await heading(page) === 'Check your e-mail', 'registering says "Check your e-mail"');
  check((await page.locator('main, body').first().innerText()).includes(email),
    'the page names the address the link went to');

  // ---- 2. The e-mail's link: choose the password. ----
  const confirm = await ask(`link ${email}`);
  check(confirm && confirm.startsWith(origin + '/auth/confirm?token='),
    'the e-mail carries a confirmation link to this server');
  await page.goto(confirm);
  check(await heading(page) === 'Choose your password', 'the link asks for a password');
  await page.fill('#password', password);
  if (await page.locator('#password2').count() > 0) await page.fill('#password2', password);
  await Promise.all([page.waitForURL(/\/auth\/signin\?confirmed=1/),
    page.click('form button[type=submit]')]);
  check((await page.locator('.notice').innerText()).includes('Your address is confirmed'),
    'the address is confirmed and the password set');

  // ---- 3. Sign in through the application. ----
  await page.goto(base + '/');
  check(await heading(page) === 'Sign in to search', 'still signed out of the application');
  await Promise.all([page.waitForURL(/\/auth\/signin/), page.click('main a:text-is("Sign in")')]);
  check(await page.locator('#password').count() === 1, 'the provider asks for the password');
  await page.fill('#email', email);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL(base + '/'), page.click('form button[type=submit]')]);
  check(here(page) === '/', 'signing in lands on /');
  const shown = (await page.locator('details.menu > summary').innerText()).trim();
  check(shown === email, `the top bar shows the address ("${shown}")`);
  check(await page.locator('form[role=search] input[name=q]').count() === 1, 'the search bar is there');
  const fresh = await openMenu();
  check(fresh === '20 of 20 searches left today', `the account menu says "${fresh}"`);
  await closeMenu();

  // ---- 4. The first search and a host. ----
  await page.fill('form[role=search] input[name=q]', 'port:443');
  await Promise.all([page.waitForNavigation(), page.click('form[role=search] button')]);
  check(await page.inputValue('form[role=search] input[name=q]') === 'port:443',
    'the bar keeps port:443');
  check(await page.locator('tr.host-row').count() === 25, 'port:443 lists 25 hosts');
  const used = Number(await ask('allowance'));
  check(used === 1, `the search was charged once (used ${used})`);
  const after = await openMenu();
  check(after === '19 of 20 searches left today', `the account menu now says "${after}"`);
  await closeMenu();
  const hostLink = page.locator('a.host-link').first();
  const hostIp = (await hostLink.innerText()).trim();
  await hostLink.click();
  const panel = page.locator('aside.host-panel');
  await panel.locator(`section.host[aria-label="Host ${hostIp}"]`).waitFor();
  check(await panel.isVisible(), `selecting ${hostIp} opens the Selected host panel`);
  check(await panel.locator('tr.service').count() >= 1, 'the panel lists the host\'s services');
  await shot(page, 'signed-in-results');
  await page.keyboard.press('Escape');

  // ---- 5. Sign out; the next sign-in asks for the password again. ----
  await openMenu();
  await Promise.all([page.waitForURL(/\/signed-out/),
    page.click('details.menu form[action="/signout"] button[type=submit]')]);
  check(await heading(page) === 'You are signed out', 'signing out says "You are signed out"');
  check(await bannerShown(page), 'the signed-out page carries the banner');
  check(!(await context.cookies(base)).some((c) => c.name === 'periscope_session'),
    'no session cookie is left');
  await shot(page, 'signed-out');
  await page.goto(base + '/');
  check(await heading(page) === 'Sign in to search', 'after signing out / says "Sign in to search"');
  await page.goto(base + '/signin');
  check(here(page) === '/auth/signin' && await page.locator('#password').count() === 1,
    'after signing out, /signin asks for the password again');
  check(!(await context.cookies(base)).some((c) => c.name === 'periscope_session'),
    '…and signs nobody in on its own');

  // ---- 6. Nothing left the origin; the password never went into a URL. ----
  check(foreign.length === 0, `no request left ${origin} (${foreign.join(', ')})`);
  check(!requests.some((u) => u.includes(password) || u.includes(encodeURIComponent(password))),
    `the password is in no URL (${requests.length} requests)`);
  await context.close();
} finally {
  await browser.close();
  answers.return?.();
  process.stdin.destroy();
}
