// Chromium (Debian's /usr/bin/chromium, driven by playwright-core) through nginx terminating
// TLS in front of `periscope serve`: the journey a new user takes. Started by
// crates/cli/tests/proxy.rs with PERISCOPE_BASE (https://periscope.test:PORT, which the browser
// resolves to 127.0.0.1), PERISCOPE_EMAIL and PERISCOPE_PASSWORD (the newcomer's),
// PERISCOPE_QUERY (the search to run) and PERISCOPE_PLAYWRIGHT (the directory holding
// node_modules/playwright-core, installed by `npm ci --prefix crates/web/tests/browser`).
//
// Opens the application; submits a wrong password (refused); registers through the sign-in
// service's pages; asks the Rust side for the confirmation link of the e-mail (`ASK link
// <email>` on stdout, the answer on stdin: the test reads the server's mail outbox); chooses
// the password; signs in through the application; searches; signs out. Every response from
// the server, on every page, must carry HSTS, and after every step every cookie must be
// Secure. The Rust side then reads back the audit record of the search. Exits non-zero on the
// first failed check.
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(`${process.env.PERISCOPE_PLAYWRIGHT}/`);
const { chromium } = require('playwright-core');
const base = process.env.PERISCOPE_BASE;
const email = process.env.PERISCOPE_EMAIL;
const password = process.env.PERISCOPE_PASSWORD;
const query = process.env.PERISCOPE_QUERY;
const origin = new URL(base).origin;
const host = new URL(base).hostname;

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
  const here = () => new URL(page.url()).pathname;
  const heading = async () => (await page.locator('h1').first().innerText()).trim();

  // Every response from the server (pages, styles, scripts, redirects) is looked at.
  const responses = [];
  const withoutHsts = [];
  const plain = [];
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (url.origin !== origin) {
      if (url.protocol === 'http:') plain.push(response.url());
      return;
    }
    responses.push(response.url());
    const hsts = response.headers()['strict-transport-security'] || '';
    if (!hsts.includes('max-age=31536000')) withoutHsts.push(`${response.status()} ${response.url()}`);
  });
  // After each step: every response so far carried HSTS, every cookie is Secure, and the
  // page is on https.
  let names = new Set();
  async function secure(step) {
    check(withoutHsts.length === 0,
      `${step}: every response carries HSTS (${responses.length} so far; without: ${withoutHsts.join(', ')})`);
    check(plain.length === 0, `${step}: nothing over plain http (${plain.join(', ')})`);
    check(new URL(page.url()).protocol === 'https:', `${step}: the page is https (${page.url()})`);
    const cookies = await context.cookies();
    const insecure = cookies.filter((c) => !c.secure).map((c) => c.name);
    check(insecure.length === 0,
      `${step}: every cookie is Secure (${cookies.map((c) => c.name).join(', ') || 'none'}; not Secure: ${insecure.join(', ')})`);
    for (const c of cookies) names.add(c.name);
  }

  // ---- 1. The application, then a wrong password. ----
  const home = await page.goto(`${base}/`);
  check(home.status() < 400, `the application answers through nginx (${home.status()})`);
  check(await heading() === 'Sign in to search', '/ says "Sign in to search"');
  await secure('the application');

  const signin = await page.goto(`${base}/auth/signin`);
  check(signin.status() === 200, 'the sign-in page answers');
  await page.fill('#email', 'nobody@example.com');
  await page.fill('#password', 'wrong-password');
  const [refused] = await Promise.all([
    page.waitForNavigation(),
    page.click('button[type=submit]'),
  ]);
  check(refused.status() === 401, `a wrong password is refused (${refused.status()})`);
  await secure('a refused sign-in');
  console.log('REFUSED');

  // ---- 2. Registration through the sign-in service. ----
  await page.goto(`${base}/`);
  await Promise.all([page.waitForURL(/\/auth\/signin/), page.click('main a:text-is("Sign in")')]);
  check(here() === '/auth/signin', 'Sign in leads to the sign-in page');
  await Promise.all([page.waitForURL(/\/auth\/register/),
    page.getByRole('link', { name: 'Register', exact: true }).click()]);
  check(await heading() === 'Create your Periscope account', 'the sign-in page links to registration');
  await page.fill('#email', email);
  await page.fill('#organisation', 'Proxy Test Ltd');
  await page.locator('#terms').check();
  await Promise.all([page.waitForNavigation(), page.click('form button[type=submit]')]);
  check(await heading() === 'Check your e-mail', 'registering says "Check your e-mail"');
  await secure('registration');

  // ---- 3. The e-mail's link: choose the password. ----
  const confirm = await ask(`link ${email}`);
  check(confirm && confirm.startsWith(`${origin}/auth/confirm?token=`),
    `the e-mail carries an https confirmation link to ${origin} (${confirm})`);
  await page.goto(confirm);
  check(await heading() === 'Choose your password', 'the link asks for a password');
  await page.fill('#password', password);
  if (await page.locator('#password2').count() > 0) await page.fill('#password2', password);
  await Promise.all([page.waitForURL(/\/auth\/signin\?confirmed=1/),
    page.click('form button[type=submit]')]);
  check((await page.locator('.notice').innerText()).includes('Your address is confirmed'),
    'the address is confirmed and the password set');
  await secure('confirmation');

  // ---- 4. Sign in through the application. ----
  await page.goto(`${base}/`);
  await Promise.all([page.waitForURL(/\/auth\/signin/), page.click('main a:text-is("Sign in")')]);
  await page.fill('#email', email);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL(`${base}/`), page.click('form button[type=submit]')]);
  check(here() === '/', 'signing in lands on /');
  const shown = (await page.locator('details.menu > summary').innerText()).trim();
  check(shown === email, `the top bar shows the address ("${shown}")`);
  check((await context.cookies(base)).some((c) => c.name === 'periscope_session'),
    'a session cookie is set');
  await secure('signing in');

  // ---- 5. A search. ----
  await page.fill('form[role=search] input[name=q]', query);
  await Promise.all([page.waitForNavigation(), page.click('form[role=search] button')]);
  check(await page.inputValue('form[role=search] input[name=q]') === query,
    `the bar keeps ${query}`);
  const rows = await page.locator('tr.host-row').count();
  check(rows > 0, `${query} lists hosts (${rows})`);
  await secure('a search');
  console.log('SEARCHED');

  // ---- 6. Sign out. ----
  const menu = page.locator('details.menu');
  if (!(await menu.evaluate((d) => d.open))) await page.click('details.menu > summary');
  await Promise.all([page.waitForURL(/\/signed-out/),
    page.click('details.menu form[action="/signout"] button[type=submit]')]);
  check(await heading() === 'You are signed out', 'signing out says "You are signed out"');
  check(!(await context.cookies(base)).some((c) => c.name === 'periscope_session'),
    'no session cookie is left');
  await secure('signing out');
  check(names.has('periscope_session') && names.size >= 2,
    `the journey's cookies were all Secure (${[...names].join(', ')})`);
  console.log('DONE');
} finally {
  await browser.close();
  answers.return?.();
  process.stdin.destroy();
}
