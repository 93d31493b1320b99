// Drives the Airlock console through issue 10's acceptance scenario, and
// issue 18's (durations in the create form, a failed upstream in the
// network log, the replay player in view, the audit counts, charts with
// history, the list's state filter, the "nothing here" page, every page at
// 420 px), in a real headless Chromium against a real `airlock serve`
// (started by e2e/console_test.go, which passes everything in the
// environment and checks the server's side afterwards). Prints SANDBOX, COOKIE_A (after
// sign-out), COOKIE_B and SCREENSHOT lines, and "ok" last when every step
// held.
import { env, drive, newContext, Shots, waitForLine, apiClient, must, tab, navLink, topNav } from './browser.mjs';
import { columnsAligned } from './layout.mjs';
import { failedUpstream } from './netfail.mjs';
import { narrow } from './narrow.mjs';
import { notFound, notFoundSignedOut } from './notfound.mjs';

const base = env('AIRLOCK_URL');
const keyA = env('AIRLOCK_KEY');
const keyB = env('AIRLOCK_KEY_B');
const tenantB = env('AIRLOCK_TENANT_B');
const allowedHost = env('AIRLOCK_ALLOWED_HOST');
const deniedHost = env('AIRLOCK_DENIED_HOST');
const upload = Buffer.from(env('AIRLOCK_UPLOAD_B64'), 'base64');
const secretValue = env('AIRLOCK_SECRET_VALUE');
const doomed = env('AIRLOCK_DOOMED'); // a sandbox to destroy from the list
const stopped = env('AIRLOCK_STOPPED'); // a sandbox that has ended already
const shots = new Shots(env('AIRLOCK_SCREENSHOTS'));
const api = apiClient(base, keyA);

const problems = [];
let page;
await drive(shots, problems, () => page, async (browser) => {
  const a = await newContext(browser, 'tenant A', 'light', problems);
  page = a.page;
  await refusesWrongKey(page);
  await signIn(page, keyA, true);
  const id = await createSandbox(page);
  console.log(`SANDBOX ${id}`);
  const sandboxURL = page.url();
  await terminal(page);
  await files(page, id);
  await network(page, id);
  await replay(page, id);
  await audit(page);
  await overview(page, id);
  await secrets(page);
  await usage(page);
  await admin(page);
  await sandboxList(page, id);
  await notFound(page, base, shots, id);
  await narrow(page, base, shots, id, deniedHost);
  await neverShown(page, a.context);

  // Tenant B, in a context of its own (dark, to see the other theme).
  const b = await newContext(browser, 'tenant B', 'dark', problems);
  page = b.page;
  await signIn(page, keyB, false);
  await otherTenant(page, id, sandboxURL);
  const cookieB = await sessionCookie(b.context);
  console.log(`COOKIE_B ${cookieB.value}`);

  page = a.page;
  await signOut(page, a.context);
  await notFoundSignedOut(page, base, shots);
});

// refusesWrongKey: the sign-in page says so when a key is not accepted.
async function refusesWrongKey(page) {
  await page.goto(base + '/');
  await page.getByLabel('API key').waitFor();
  await shots.take(page, 'sign-in');
  await page.getByLabel('API key').fill('alk_not-a-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').first().waitFor();
}

async function signIn(page, key, admin) {
  await page.goto(base + '/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const nav = topNav(page);
  await nav.getByRole('button', { name: 'Sign out' }).waitFor();
  await nav.getByRole('link', { name: 'Sandboxes', exact: true }).waitFor();
  // Only an admin is offered the admin page.
  const offered = await nav.getByRole('link', { name: 'Keys & tenants' }).count() > 0;
  must(offered === admin, `"Keys & tenants" in the navigation: ${offered}, signed in as admin: ${admin}`);
}

async function sessionCookie(context) {
  const c = (await context.cookies(base)).find((c) => c.name === 'airlock_session');
  must(c, 'no airlock_session cookie after sign-in');
  must(c.httpOnly && c.sameSite === 'Strict', `session cookie ${JSON.stringify({ ...c, value: '…' })}: want HttpOnly, SameSite=Strict`);
  return c;
}

async function createSandbox(page) {
  await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
  await page.getByRole('button', { name: 'New sandbox' }).click();
  const form = page.getByRole('form', { name: 'New sandbox' });
  await form.waitFor();
  await form.getByLabel('Allowed hosts').fill(allowedHost);
  await form.getByLabel('Metadata').fill('owner=console-e2e\nticket=issue-10');
  // The timeout takes what airlock create --timeout takes (Go durations),
  // and says inline what is wrong with anything else; a bad one creates
  // nothing.
  const timeout = form.getByLabel('Timeout', { exact: true });
  for (const [text, says] of [['900', 'has no unit'], ['48h', 'is longer than the 24h maximum'], ['1 hour', 'has no spaces'], ['5d', 'unknown unit "d"']]) {
    await timeout.fill(text);
    await timeout.blur();
    await form.locator('.field-error').filter({ hasText: says }).waitFor();
    must(await timeout.getAttribute('aria-invalid') === 'true', `timeout ${JSON.stringify(text)} is not marked invalid`);
  }
  await shots.take(page, 'create-form-bad-timeout');
  const before = JSON.parse(await api('GET', '/v1/sandboxes?limit=1000')).sandboxes.length;
  await form.getByRole('button', { name: 'Create sandbox' }).click();
  await page.waitForFunction(() => document.activeElement?.getAttribute('aria-invalid') === 'true');
  const after = JSON.parse(await api('GET', '/v1/sandboxes?limit=1000')).sandboxes.length;
  must(after === before && (await form.isVisible()), `a create with timeout "5d": ${after - before} sandboxes made, form shown: ${await form.isVisible()}`);
  await timeout.fill('15m');
  await form.locator('.field-error').waitFor({ state: 'detached' });
  await shots.take(page, 'create-form');
  await form.getByRole('button', { name: 'Create sandbox' }).click();
  await page.waitForURL(/\/sandboxes\/[^/?#]+/, { timeout: 60_000 });
  const id = decodeURIComponent(page.url().match(/\/sandboxes\/([^/?#]+)/)[1]);
  await page.getByRole('heading', { name: id }).first().waitFor();
  const sb = JSON.parse(await api('GET', `/v1/sandboxes/${id}`));
  const secs = (Date.parse(sb.expires_at) - Date.parse(sb.created_at)) / 1000;
  must(Math.abs(secs - 900) < 2, `sandbox made with timeout 15m expires ${secs} s after it was created, want 900`);
  return id;
}

// overview: the charts open with the server's last minutes (a line of
// several points when they first appear, not an empty chart that fills as
// it polls); then the Overview stays open while the sandbox burns some
// CPU, until both live charts have drawn a line of several samples.
async function overview(page, id) {
  // The server reads every running sandbox every 10 s: wait for three.
  const until = Date.now() + 40_000;
  let kept = 0;
  while ((kept = JSON.parse(await api('GET', `/v1/sandboxes/${id}/metrics/history`)).samples.length) < 3 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 1000));
  }
  must(kept >= 3, `the server keeps ${kept} readings of ${id}, want 3 or more`);
  await page.evaluate(() => {
    window.firstCharts = null;
    const look = () => {
      const charts = [...document.querySelectorAll('[role=tabpanel] figure.chart svg')];
      if (charts.length < 2 || window.firstCharts) return;
      window.firstCharts = charts.map((svg) => [...svg.querySelectorAll('path.line')].map((l) => (l.getAttribute('d').match(/[ML]/g) || []).length));
      obs.disconnect();
    };
    const obs = new MutationObserver(look);
    obs.observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  await tab(page, 'Overview').click();
  await page.waitForFunction(() => window.firstCharts);
  const first = await page.evaluate(() => window.firstCharts);
  must(first.every((lines) => lines.length === 1 && lines[0] >= 2),
    `points of each chart's line when the charts first appeared: ${JSON.stringify(first)}, want a line of 2 or more in each`);
  const busy = api('POST', `/v1/sandboxes/${id}/exec`, { command: 'timeout 8 sh -c "while :; do :; done"; true', timeout_s: 60 });
  await page.waitForFunction(() => {
    const lines = [...document.querySelectorAll('[role=tabpanel] svg path.line')];
    return lines.length >= 2 && lines.every((l) => (l.getAttribute('d').match(/L/g) || []).length >= 3);
  }, null, { timeout: 30_000 });
  await busy;
  // Model tokens, counted at the egress proxy (none here: no model calls),
  // and the cost card, which says why it is empty on a server without a
  // price table.
  await page.getByText('Model tokens', { exact: true }).waitFor();
  await page.getByText('counted at the egress proxy').or(page.getByText(/^0 calls/)).first().waitFor();
  await page.getByText('no price table on this server').waitFor();
  await shots.take(page, 'sandbox-overview');
}

async function terminal(page) {
  await tab(page, 'Terminal').click();
  await page.getByRole('button', { name: 'New session' }).click();
  const term = page.locator('.xterm').first();
  await term.waitFor();
  // The shell's prompt first, then keys as a person types them.
  await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent || '').includes('$'));
  await term.click();
  await page.keyboard.type('echo hello-console');
  await page.keyboard.press('Enter');
  await waitForLine(page, '.xterm-rows > div', 'hello-console');
  await shots.take(page, 'terminal');
}

async function files(page, id) {
  await tab(page, 'Files').click();
  await page.getByText('/home/user').first().waitFor();
  const zone = page.getByText('Drop files here').first();
  await zone.waitFor();
  const input = page.locator('input[type=file]').first();
  await input.setInputFiles({ name: 'console-upload.bin', mimeType: 'application/octet-stream', buffer: upload });
  await page.getByRole('cell', { name: 'console-upload.bin', exact: true }).waitFor();

  // A real drop: a DataTransfer with a File, dispatched on the zone.
  const handle = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(['dropped by the console test\n'], 'dropped.txt', { type: 'text/plain' }));
    return dt;
  });
  for (const type of ['dragenter', 'dragover', 'drop']) await zone.dispatchEvent(type, { dataTransfer: handle });
  await page.getByRole('cell', { name: 'dropped.txt', exact: true }).waitFor();
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'console-upload.bin', exact: true }) });
  await row.getByRole('link', { name: 'Download' }).waitFor();
  await row.getByRole('button', { name: 'Delete' }).waitFor();
  await shots.take(page, 'files');

  // What the browser uploaded is what the API reads back, byte for byte.
  const res = await fetch(`${base}/v1/sandboxes/${id}/files?path=/home/user/console-upload.bin`, { headers: { Authorization: `Bearer ${keyA}` } });
  const got = Buffer.from(await res.arrayBuffer());
  must(res.ok && got.equals(upload), `read back console-upload.bin: ${res.status}, ${got.length} bytes, want the ${upload.length} uploaded`);
  const dropped = await api('GET', `/v1/sandboxes/${id}/files?path=/home/user/dropped.txt`);
  must(dropped === 'dropped by the console test\n', `read back dropped.txt: ${JSON.stringify(dropped)}`);
}

async function curl(id) {
  const out = JSON.parse(await api('POST', `/v1/sandboxes/${id}/exec`, {
    command: `curl -s -w ' %{http_code}' --max-time 20 http://${deniedHost}/`, timeout_s: 60,
  }));
  return out.stdout.trim();
}

async function network(page, id) {
  const denied = await curl(id);
  must(denied.endsWith(' 403'), `curl to ${deniedHost} before allowing it: ${JSON.stringify(denied)}, want 403 from the proxy`);
  await tab(page, 'Network').click();
  const row = (decision) => page.getByRole('row').filter({ hasText: deniedHost })
    .filter({ has: page.getByRole('cell', { name: decision, exact: true }) });
  await row('denied').first().waitFor();
  await page.getByRole('button', { name: `Allow ${deniedHost}`, exact: true }).first().click();
  await page.getByRole('status').filter({ hasText: 'allowed' }).first().waitFor();

  const policy = JSON.parse(await api('GET', `/v1/sandboxes/${id}/network`));
  must((policy.allow || []).includes(deniedHost) && policy.allow.includes(allowedHost),
    `live policy after "Allow ${deniedHost}": ${JSON.stringify(policy)}`);
  const retried = await curl(id);
  must(retried.startsWith(`hello from ${deniedHost}`) && retried.endsWith(' 200'),
    `curl to ${deniedHost} after allowing it: ${JSON.stringify(retried)}, want the page and 200`);

  // The retry shows in the log, as allowed: the log may be live or
  // loaded per visit, so visit again if it has not appeared.
  try {
    await row('allowed').first().waitFor({ timeout: 5_000 });
  } catch {
    await tab(page, 'Overview').click();
    await tab(page, 'Network').click();
    await row('allowed').first().waitFor();
  }
  await failedUpstream(page, id, deniedHost);
  await shots.take(page, 'network-log');
}

async function replay(page, id) {
  // Enough commands for a list longer than the window.
  for (let i = 1; i <= 14; i++) {
    await api('POST', `/v1/sandboxes/${id}/exec`, { command: `echo replay-${i}`, timeout_s: 30 });
  }
  const sessions = JSON.parse(await api('GET', `/v1/sandboxes/${id}/sessions`));
  const list = Array.isArray(sessions) ? sessions : sessions.sessions;
  must(list?.length === 1, `sessions of ${id}: ${JSON.stringify(sessions)}`);
  await tab(page, 'Replay').click();
  const entry = page.locator('tr, li').filter({ hasText: list[0].id })
    .filter({ has: page.getByRole('button', { name: 'Play' }) }).last();
  await entry.getByRole('button', { name: 'Play' }).click();
  const player = page.locator('.ap-wrapper, .ap-player').first();
  await player.waitFor();
  const speed = page.getByLabel('Speed');
  await speed.waitFor();
  const fastest = await speed.locator('option').evaluateAll((os) =>
    os.map((o) => o.value).sort((x, y) => parseFloat(y) - parseFloat(x))[0]);
  await speed.selectOption(fastest);
  const played = () => page.waitForFunction(() => [...document.querySelectorAll('.ap-wrapper, .ap-player')]
    .some((el) => el.textContent.includes('hello-console')), null, { timeout: 30_000 });
  try {
    await played();
  } catch {
    // A player that waits for a click on its start overlay or play button.
    const start = page.locator('.ap-overlay-start');
    if (await start.count()) await start.first().click();
    else await page.locator('.ap-playback-button').first().click({ force: true });
    await played();
  }
  await shots.take(page, 'replay');
  await columnsAligned(page, 'the replay list');

  // Play pressed at the bottom of a long list: the player opens above it,
  // in view below the sticky header, with the focus.
  await page.locator('.player-panel').getByRole('button', { name: 'Close' }).click();
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const lastRow = page.getByRole('row').filter({ hasText: 'echo replay-14' });
  await lastRow.getByRole('button', { name: 'Play' }).click();
  await page.locator('.player-panel').filter({ hasText: 'echo replay-14' }).waitFor();
  await page.waitForFunction(() => document.querySelector('.player-panel .ap-wrapper, .player-panel .ap-player'));
  const box = await page.evaluate(() => {
    const header = document.querySelector('header.topbar').getBoundingClientRect();
    const p = document.querySelector('.player-panel').getBoundingClientRect();
    return { header: header.bottom, top: p.top, bottom: p.bottom, height: innerHeight, scrollY,
      focused: !!document.activeElement?.closest('.player-panel') };
  });
  must(box.top >= box.header && box.top < box.height - 100,
    `replay player at ${Math.round(box.top)}..${Math.round(box.bottom)} px (page scrolled ${box.scrollY}), want its top below the header (${box.header} px) and in the window (${box.height} px)`);
  must(box.focused, 'the focus is not in the replay player after Play');
  await shots.take(page, 'replay-from-the-bottom');
}

async function audit(page) {
  await tab(page, 'Audit').click();
  await page.getByLabel('Type').waitFor();
  await page.getByRole('button', { name: 'Verify chain' }).click();
  await page.getByRole('status').filter({ hasText: 'Chain verified' }).first().waitFor();
  // The count above the list is the count the check verified.
  const counts = () => page.evaluate(() => {
    const listed = [...document.querySelectorAll('[role=tabpanel] .toolbar span')].map((e) => e.textContent.match(/^(\d+)\+? events? · oldest first/)).find(Boolean);
    const verified = document.querySelector('[role=status]')?.textContent.match(/Chain verified: (\d+) event/);
    return { listed: listed && Number(listed[1]), verified: verified && Number(verified[1]), rows: document.querySelectorAll('[role=tabpanel] tbody tr').length };
  });
  try {
    await page.waitForFunction(() => {
      const listed = [...document.querySelectorAll('[role=tabpanel] .toolbar span')].map((e) => e.textContent.match(/^(\d+)\+? events? · oldest first/)).find(Boolean);
      const verified = document.querySelector('[role=status]')?.textContent.match(/Chain verified: (\d+) event/);
      return listed && verified && listed[1] === verified[1] && document.querySelectorAll('[role=tabpanel] tbody tr').length === Number(listed[1]);
    }, null, { timeout: 10_000 });
  } catch {
    const c = await counts();
    throw new Error(`after Verify chain: the list says ${c.listed} events and shows ${c.rows} rows, the check verified ${c.verified}`);
  }
  await shots.take(page, 'audit-verified');
  const { verified } = await counts();
  await page.getByRole('button', { name: 'show newer events' }).click();
  await page.waitForFunction((n) => {
    const listed = [...document.querySelectorAll('[role=tabpanel] .toolbar span')].map((e) => e.textContent.match(/^(\d+)\+? events? · oldest first/)).find(Boolean);
    return listed && Number(listed[1]) > n;
  }, verified);

  // Filtered to the keys typed in the terminal, one event opens as JSON.
  await page.getByLabel('Type').selectOption('session.input');
  const typed = page.getByRole('row').filter({ hasText: 'session.input' });
  await typed.first().waitFor();
  await page.waitForFunction(() => ![...document.querySelectorAll('tbody tr')].some((tr) => tr.textContent.includes('sandbox.created')));
  await typed.first().click();
  await page.locator('pre').filter({ hasText: '"type": "session.input"' }).first().waitFor();
}

async function secrets(page) {
  await navLink(page, 'Secrets').click();
  await page.getByRole('heading', { name: 'Secrets' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('CONSOLE_TOKEN');
  await page.getByLabel('Value', { exact: true }).fill(secretValue);
  await page.getByLabel('Hosts', { exact: true }).fill(allowedHost);
  await page.getByRole('button', { name: 'Create secret' }).click();
  await page.getByRole('cell', { name: 'CONSOLE_TOKEN', exact: true }).waitFor();
  await shots.take(page, 'secrets');
}

async function usage(page) {
  await navLink(page, 'Usage').click();
  await page.getByRole('heading', { name: 'Usage' }).waitFor();
  for (const chart of ['CPU-seconds', 'Memory', 'Egress', 'Sandbox-hours', 'Model tokens']) {
    await page.getByRole('img', { name: new RegExp(`^${chart}`) }).first().waitFor();
  }
  await shots.take(page, 'usage');
}

async function admin(page) {
  await navLink(page, 'Keys & tenants').click();
  await page.getByRole('heading', { name: 'Keys & tenants' }).waitFor();
  await page.getByText(tenantB, { exact: true }).first().waitFor();
  await shots.take(page, 'keys-and-tenants');
}

async function sandboxList(page, id) {
  await navLink(page, 'Sandboxes').click();
  const link = page.getByRole('link', { name: id });
  await link.waitFor();
  // Running sandboxes by default; the stopped ones one click away, the
  // choice in the URL (a reload keeps it, Back undoes it).
  const view = (name) => page.getByRole('radio', { name, exact: true });
  must(await view('Running').isChecked(), 'the list does not open on Running');
  must(await page.getByRole('link', { name: stopped }).count() === 0, `the default list shows ${stopped}, which has ended`);
  await view('Stopped').check();
  await page.getByRole('link', { name: stopped }).waitFor();
  must(new URL(page.url()).searchParams.get('state') === 'stopped', `URL after choosing Stopped: ${page.url()}`);
  await page.waitForFunction((sid) => ![...document.querySelectorAll('a')].some((a) => a.textContent === sid), id);
  await page.reload();
  await page.getByRole('link', { name: stopped }).waitFor();
  must(await view('Stopped').isChecked(), 'a reload forgot the Stopped filter');
  await shots.take(page, 'sandboxes-stopped');
  await page.goBack();
  await link.waitFor();
  must(await view('Running').isChecked() && !new URL(page.url()).searchParams.has('state'), `Back: ${page.url()}`);
  const row = page.getByRole('row').filter({ has: link });
  await row.getByRole('button', { name: 'Extend' }).waitFor();
  await row.getByRole('button', { name: 'Destroy' }).waitFor();
  await row.getByText('owner=console-e2e').first().waitFor();
  // The live columns: its memory from the one metrics call of the list.
  await page.waitForFunction((sid) => [...document.querySelectorAll('tr')]
    .some((tr) => tr.textContent.includes(sid) && /\d (B|KiB|MiB|GiB)\b/.test(tr.cells[6]?.textContent || '')), id);
  await shots.take(page, 'sandboxes-list');

  // Destroy the other one, made by the test for this: it asks first.
  const doomedRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: doomed }) });
  await doomedRow.getByRole('button', { name: 'Destroy' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Destroy sandbox' }).click();
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  await page.waitForFunction((d) => ![...document.querySelectorAll('tr')]
    .some((tr) => tr.textContent.includes(d) && tr.textContent.includes('running')), doomed);
}

// neverShown: the key and the secret value are nowhere the page's script
// can read them back.
async function neverShown(page, context) {
  const state = await page.evaluate(() => JSON.stringify({
    local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie, html: document.documentElement.outerHTML,
  }));
  must(!state.includes(keyA), 'the API key is readable by the page (storage, cookie or DOM)');
  must(!state.includes(secretValue), 'a secret value is readable by the page');
  await sessionCookie(context);
}

async function otherTenant(page, id, sandboxURL) {
  const behind = page.waitForResponse((r) => new URL(r.url()).pathname === `/v1/sandboxes/${id}` && r.request().method() === 'GET');
  await page.goto(sandboxURL);
  const res = await behind;
  must(res.status() === 404, `tenant B's page load of GET /v1/sandboxes/${id}: ${res.status()}, want 404`);
  await page.getByText(/not found/i).first().waitFor();
  await shots.take(page, 'other-tenant-not-found');
  await navLink(page, 'Sandboxes').click();
  await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
  await page.getByText('No running sandboxes').first().waitFor();
  await page.getByRole('radio', { name: 'All', exact: true }).check();
  await page.getByText('No sandboxes yet').first().waitFor();
  must(await page.getByText(id).count() === 0, `tenant B's list shows ${id}`);
}

async function signOut(page, context) {
  const old = await sessionCookie(context);
  await topNav(page).getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  const after = (await context.cookies(base)).find((c) => c.name === 'airlock_session' && c.value);
  must(!after, 'the session cookie is still set after sign-out');
  console.log(`COOKIE_A ${old.value}`);
}
