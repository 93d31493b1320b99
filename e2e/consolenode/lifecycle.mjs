// Drives a sandbox's lifecycle through the console in headless Chromium
// against a real `airlock serve` (started by e2e/console_lifecycle_test.go,
// which made the sandbox, passes everything in the environment and checks
// the server's side afterwards): pause and resume it from its row and from
// its page, see "paused" (styled apart) and the tabs that need it running
// say so, take a snapshot and find it under Snapshots, start a sandbox from
// it, fork 2, delete the snapshot; the paused page and the Snapshots page
// fit 420 px. Prints FROM_SNAPSHOT, FORKS and SCREENSHOT lines, and "ok"
// last when every step held.
import { env, drive, newContext, Shots, waitForLine, apiClient, must, tab, navLink, topNav, viewport } from './browser.mjs';
import { columnsAligned, fits } from './layout.mjs';

const base = env('AIRLOCK_URL');
const key = env('AIRLOCK_KEY');
const id = env('AIRLOCK_SANDBOX'); // running, made by the Go test
const snapName = env('AIRLOCK_SNAPSHOT_NAME');
const shots = new Shots(env('AIRLOCK_SCREENSHOTS'));
const api = apiClient(base, key);
const sandbox = async (sid) => JSON.parse(await api('GET', `/v1/sandboxes/${encodeURIComponent(sid)}`));

const problems = [];
let page;
await drive(shots, problems, () => page, async (browser) => {
  ({ page } = await newContext(browser, 'lifecycle', 'light', problems));
  await signIn(page);
  await listPauseResume(page);
  await pagePauseResume(page);
  await pausedTabs(page);
  await snapshot(page);
  const fromSnap = await sandboxFromSnapshot(page);
  console.log(`FROM_SNAPSHOT ${fromSnap}`);
  const forks = await fork(page);
  console.log(`FORKS ${forks.join(',')}`);
  await deleteSnapshot(page);
});

async function signIn(page) {
  await page.goto(base + '/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await topNav(page).getByRole('button', { name: 'Sign out' }).waitFor();
  // Snapshots has a place in the navigation.
  await navLink(page, 'Snapshots').waitFor();
}

function rowOf(page, sid) {
  return page.getByRole('row').filter({ has: page.getByRole('link', { name: sid, exact: true }) });
}

// head is one of the sandbox page's own buttons (not a tab's).
function head(page, name) {
  return page.locator('.head-actions').getByRole('button', { name, exact: true });
}

async function wantState(sid, want) {
  const sb = await sandbox(sid);
  must(sb.state === want, `${sid} is ${sb.state} by the API, want ${want}`);
  return sb;
}

// listPauseResume: the list's row pauses the sandbox; the Paused view
// (in the URL) lists it; its row resumes it, and it leaves that view.
async function listPauseResume(page) {
  await navLink(page, 'Sandboxes').click();
  const row = rowOf(page, id);
  await row.getByRole('button', { name: 'Pause', exact: true }).click();
  await row.locator('.pill.paused').filter({ hasText: /^paused$/ }).waitFor();
  const sb = await wantState(id, 'paused');
  must(sb.paused_at, `paused ${id} has no paused_at: ${JSON.stringify(sb)}`);
  await row.getByText('clock stopped').waitFor();
  await page.getByRole('radio', { name: 'Paused', exact: true }).check();
  must(new URL(page.url()).searchParams.get('state') === 'paused', `URL after choosing Paused: ${page.url()}`);
  await rowOf(page, id).locator('.pill.paused').waitFor();
  await shots.take(page, 'list-paused');
  await rowOf(page, id).getByRole('button', { name: 'Resume', exact: true }).click();
  await page.waitForFunction((sid) => ![...document.querySelectorAll('tbody a')].some((a) => a.textContent === sid), id);
  await page.getByText('No paused sandboxes').waitFor();
  await wantState(id, 'running');
}

// pillLook is how the page title's state pill is drawn.
function pillLook(page) {
  return page.locator('.sandbox-title .pill').evaluate((el) => {
    const cs = getComputedStyle(el);
    const dot = getComputedStyle(el, '::before');
    return { text: el.textContent, color: cs.color, background: cs.backgroundColor, mark: `${dot.borderLeftWidth} ${dot.borderRadius}` };
  });
}

// pagePauseResume: the sandbox page's Pause freezes it: the pill says
// paused (in colours and a sign of its own), a banner says since when and
// until when, the API refuses work with 409 paused; Resume undoes it.
async function pagePauseResume(page) {
  await page.goto(`${base}/sandboxes/${encodeURIComponent(id)}`);
  await page.getByRole('heading', { name: id }).first().waitFor();
  const running = await pillLook(page);
  must(running.text === 'running', `pill before Pause: ${running.text}`);
  await head(page, 'Pause').click();
  await page.locator('.sandbox-title .pill.paused').filter({ hasText: /^paused$/ }).waitFor();
  await page.getByRole('status').filter({ hasText: /^Paused( .* ago)?: its processes are frozen.*destroyed in .* unless resumed/ }).waitFor();
  await head(page, 'Resume').waitFor();
  must(await head(page, 'Extend').isDisabled(), 'Extend is enabled on a paused sandbox');
  for (const name of ['Snapshot', 'Fork', 'Destroy']) must(await head(page, name).isEnabled(), `${name} is disabled on a paused sandbox`);
  const paused = await pillLook(page);
  must(paused.color !== running.color && paused.background !== running.background && paused.mark !== running.mark,
    `the paused pill looks like the running one: ${JSON.stringify(paused)} vs ${JSON.stringify(running)}`);
  await wantState(id, 'paused');
  const res = await fetch(`${base}/v1/sandboxes/${id}/exec`, {
    method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ command: 'true' }),
  });
  const body = await res.json().catch(() => ({}));
  must(res.status === 409 && body.error?.code === 'paused', `exec on the paused sandbox: ${res.status} ${JSON.stringify(body)}, want 409 paused`);
  await page.locator('[role=tabpanel] .details').getByText('Paused', { exact: true }).waitFor();
  await shots.take(page, 'sandbox-paused');

  await head(page, 'Resume').click();
  await page.locator('.sandbox-title .pill').filter({ hasText: /^running$/ }).waitFor();
  await head(page, 'Pause').waitFor();
  must(await page.locator('.notice.paused').count() === 0, 'the paused banner is still shown after Resume');
  await wantState(id, 'running');
}

// pausedTabs: paused again, the Terminal and Files tabs say "paused —
// resume to use ..." instead of failing, the page fits a phone; the
// Terminal tab's own Resume brings the shell back.
async function pausedTabs(page) {
  await head(page, 'Pause').click();
  await page.locator('.sandbox-title .pill.paused').waitFor();
  await tab(page, 'Files').click();
  await page.getByText('This sandbox is paused — resume to use the files.').waitFor();
  await tab(page, 'Processes').click();
  await page.getByRole('status').filter({ hasText: 'resume to use the processes' }).waitFor();
  await tab(page, 'Terminal').click();
  await page.getByText('This sandbox is paused — resume to use the terminal.').waitFor();
  must(await page.getByRole('button', { name: 'New session' }).count() === 0, 'New session is offered on a paused sandbox');
  must(await page.getByRole('tabpanel').getByRole('alert').count() === 0,
    `the paused Terminal tab shows an error: ${await page.getByRole('tabpanel').getByRole('alert').allTextContents()}`);
  await shots.take(page, 'terminal-paused');
  await page.setViewportSize({ width: 420, height: 860 });
  await shots.take(page, 'narrow-terminal-paused');
  await fits(page, 'paused sandbox, Terminal tab');
  await page.setViewportSize(viewport);

  await page.getByRole('button', { name: 'Resume sandbox', exact: true }).click();
  await page.locator('.sandbox-title .pill').filter({ hasText: /^running$/ }).waitFor();
  await wantState(id, 'running');
  await page.getByRole('button', { name: 'New session' }).click();
  const term = page.locator('.xterm').first();
  await term.waitFor();
  await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent || '').includes('$'));
  await term.click();
  await page.keyboard.type('echo resumed-$((40+2))');
  await page.keyboard.press('Enter');
  await waitForLine(page, '.xterm-rows > div', 'resumed-42');
}

// snapshot: the Snapshot dialog refuses a bad name inline, takes one
// under a good one, and leads to it under Snapshots with its facts.
async function snapshot(page) {
  await tab(page, 'Overview').click();
  await head(page, 'Snapshot').click();
  const form = page.getByRole('form', { name: 'Take a snapshot' });
  const name = form.getByLabel('Name', { exact: true });
  await name.fill('-bad');
  await form.getByRole('button', { name: 'Take snapshot' }).click();
  await form.locator('.field-error').filter({ hasText: 'must start with a letter or a digit' }).waitFor();
  must(await name.getAttribute('aria-invalid') === 'true', 'a bad snapshot name is not marked invalid');
  must(JSON.parse(await api('GET', '/v1/snapshots')).snapshots.length === 0, 'a snapshot was taken under a bad name');
  await name.fill(snapName);
  await form.getByRole('button', { name: 'Take snapshot' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('status').filter({ hasText: `Snapshot ${snapName} taken` }).waitFor({ timeout: 60_000 });
  await shots.take(page, 'snapshot-taken');
  await dialog.getByRole('link', { name: 'Open in Snapshots' }).click();
  await page.getByRole('heading', { name: 'Snapshots' }).waitFor();
  must(await navLink(page, 'Snapshots').getAttribute('aria-current') === 'page', 'Snapshots is not the current page in the navigation');

  const want = JSON.parse(await api('GET', '/v1/snapshots')).snapshots;
  must(want.length === 1 && want[0].name === snapName && want[0].sandbox === id, `snapshots by the API: ${JSON.stringify(want)}`);
  const row = snapRow(page);
  await row.waitFor();
  must(await row.getAttribute('aria-current') === 'true', `the snapshot linked to is not picked out in the list`);
  const cells = await row.getByRole('cell').allTextContents();
  const [, sb, template, node, size, created] = cells.map((c) => c.trim());
  must(sb === id && template === want[0].template && node === want[0].node && /^\d+(\.\d)? (B|KiB|MiB|GiB)$/.test(size) && /ago$/.test(created),
    `snapshot row ${JSON.stringify(cells)}, want ${JSON.stringify(want[0])}`);
  await columnsAligned(page, 'snapshots');
  await shots.take(page, 'snapshots');
  await page.setViewportSize({ width: 420, height: 860 });
  await shots.take(page, 'narrow-snapshots');
  await fits(page, 'snapshots');
  await columnsAligned(page, 'narrow snapshots');
  await page.setViewportSize(viewport);
}

function snapRow(page) {
  return page.getByRole('row').filter({ has: page.getByRole('cell', { name: snapName, exact: true }) });
}

// sandboxFromSnapshot: the snapshot's row opens the create form on the
// snapshot; the new sandbox's page says where it came from, with a link.
async function sandboxFromSnapshot(page) {
  await snapRow(page).getByRole('button', { name: `New sandbox from ${snapName}` }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'New sandbox from snapshot' }).waitFor();
  const form = page.getByRole('form', { name: 'New sandbox' });
  must(await form.getByLabel('Snapshot', { exact: true }).inputValue() === snapName, 'the create form is not on the snapshot');
  await form.getByRole('button', { name: 'Create sandbox' }).click();
  await page.waitForURL((u) => /^\/sandboxes\/[^/]+$/.test(u.pathname) && !u.pathname.endsWith('/' + id), { timeout: 60_000 });
  const made = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await page.getByRole('heading', { name: made }).first().waitFor();
  await page.locator('.facts').getByRole('link', { name: snapName, exact: true }).waitFor();
  const sb = await sandbox(made);
  must(sb.snapshot === snapName, `sandbox made from the snapshot: snapshot ${JSON.stringify(sb.snapshot)}, want ${snapName}`);
  await shots.take(page, 'from-snapshot');
  return made;
}

// fork: the Fork dialog refuses 51, makes 2, and links both; a fork's
// page links back to its parent.
async function fork(page) {
  await page.goto(`${base}/sandboxes/${encodeURIComponent(id)}`);
  await head(page, 'Fork').click();
  const form = page.getByRole('form', { name: 'Fork sandbox' });
  const count = form.getByLabel('How many', { exact: true });
  await count.fill('51');
  await form.getByRole('button', { name: 'Fork', exact: true }).click();
  await form.locator('.field-error').filter({ hasText: 'make 1 to 50' }).waitFor();
  await count.fill('2');
  await form.getByRole('button', { name: 'Fork', exact: true }).click();
  const links = page.getByRole('dialog').getByRole('list', { name: 'The forks' }).getByRole('link');
  await links.nth(1).waitFor({ timeout: 90_000 });
  const ids = (await links.allTextContents()).map((s) => s.trim());
  must(ids.length === 2 && !ids.includes(id), `fork links: ${JSON.stringify(ids)}`);
  await page.getByRole('dialog').getByRole('status').filter({ hasText: `Made 2 sandboxes from ${id}` }).waitFor();
  await shots.take(page, 'forked');
  await links.first().click();
  await page.waitForURL((u) => u.pathname === `/sandboxes/${encodeURIComponent(ids[0])}`);
  await page.getByRole('heading', { name: ids[0] }).first().waitFor();
  await page.locator('.facts').getByRole('link', { name: id, exact: true }).waitFor();
  for (const f of ids) {
    const sb = await sandbox(f);
    must(sb.fork_of === id, `fork ${f}: fork_of ${JSON.stringify(sb.fork_of)}, want ${id}`);
  }
  return ids;
}

// deleteSnapshot: Delete asks first, then the list is empty.
async function deleteSnapshot(page) {
  await navLink(page, 'Snapshots').click();
  await snapRow(page).getByRole('button', { name: 'Delete', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete snapshot' }).click();
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  await page.getByText('No snapshots yet').waitFor();
  must(JSON.parse(await api('GET', '/v1/snapshots')).snapshots.length === 0, 'the snapshot is still there after Delete');
}
