// The browser side of the console test: Debian's Chromium driven by
// playwright-core, with a guard that refuses every request off loopback so
// that a console bug (a CDN font, an analytics beacon) fails the test
// instead of leaking traffic.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const viewport = { width: 1366, height: 768 };

export async function launch(executablePath) {
  return chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // Name resolution of anything but loopback fails inside the browser.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1'],
  });
}

function loopback(url) {
  if (/^(data|blob|about):/.test(url)) return true;
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
}

// env reads a variable the Go test sets; one missing is the test's bug.
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

// drive launches the browser ($AIRLOCK_CHROMIUM) and runs steps with it.
// It prints "ok" once every step held and no page reported a problem;
// else "FAILED at" the URL of page() with why, the problems, and a
// screenshot of that page, and sets the exit code. The browser is closed
// either way.
export async function drive(shots, problems, page, steps) {
  const browser = await launch(env('AIRLOCK_CHROMIUM'));
  try {
    await steps(browser);
    must(problems.length === 0, `problems:\n${problems.join('\n')}`);
    console.log('ok');
  } catch (err) {
    const p = page();
    console.log(`FAILED at ${p?.url()}: ${err.stack || err}`);
    for (const x of problems) console.log(x);
    if (p) await p.screenshot({ path: `${shots.dir}/failure.png` }).catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

// newContext opens a browser context with the guard, the page's errors
// collected in problems, and a page with short default waits.
export async function newContext(browser, name, colorScheme, problems) {
  const context = await browser.newContext({ viewport, colorScheme, acceptDownloads: true });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (loopback(url)) return route.continue();
    problems.push(`${name}: request off loopback refused: ${url}`);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (err) => problems.push(`${name}: page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') console.log(`${name} console error: ${msg.text()}`);
  });
  return { context, page };
}

// Shots saves full-window PNGs, numbered in the order they were taken.
export class Shots {
  constructor(dir) {
    this.dir = dir;
    this.n = 0;
    mkdirSync(dir, { recursive: true });
  }

  async take(page, name) {
    // Let charts, fonts and transitions settle: a screenshot is for people.
    await page.evaluate(() => document.fonts.ready);
    await page.waitForTimeout(400);
    const file = join(this.dir, `${String(++this.n).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file });
    console.log(`SCREENSHOT ${file}`);
  }
}

// waitForText waits until one of the elements matched by selector has
// exactly text (trimmed) as its text, as it renders (xterm rows, player
// lines).
export async function waitForLine(page, selector, text, timeout = 20_000) {
  await page.waitForFunction(
    ([sel, want]) => [...document.querySelectorAll(sel)].some((el) => el.textContent.trim() === want),
    [selector, text], { timeout },
  );
}

// api calls the public API with a bearer key, as the console's user could.
export function apiClient(base, key) {
  return async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${key}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text;
  };
}

export function must(cond, msg) {
  if (!cond) throw new Error(msg);
}

// tab is one of a sandbox page's tabs.
export function tab(page, name) {
  return page.getByRole('tab', { name, exact: true });
}

// topNav is the console's own navigation, first on every page (a sandbox
// page adds a breadcrumb, the file browser a path).
export function topNav(page) {
  return page.getByRole('navigation').first();
}

export function navLink(page, name) {
  return topNav(page).getByRole('link', { name, exact: true });
}
