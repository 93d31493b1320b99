// Drives volumes and image templates through the console in headless
// Chromium against a real `airlock serve` (started by
// e2e/console_volumes_test.go, which passes everything in the environment
// and checks the server's side afterwards): create a volume under
// Volumes, create a sandbox that mounts it (with pause options) from the
// New sandbox form, see the server refuse to delete the mounted volume
// and the page say why, then delete it once the sandbox is gone; import a
// `docker save` tarball under Templates and see each layer's progress,
// then the template listed; an import from a registry the server may not
// reach shows the server's error. Volumes and Templates fit 420 px.
// Prints SANDBOX and SCREENSHOT lines, and "ok" last when every step held.
import { env, drive, newContext, Shots, apiClient, must, navLink, topNav, viewport } from './browser.mjs';
import { columnsAligned, fits } from './layout.mjs';

const base = env('AIRLOCK_URL');
const key = env('AIRLOCK_KEY');
const volume = env('AIRLOCK_VOLUME');
const tarball = env('AIRLOCK_TARBALL'); // a docker save of a two-layer image
const template = env('AIRLOCK_TEMPLATE');
const shots = new Shots(env('AIRLOCK_SCREENSHOTS'));
const api = apiClient(base, key);
const mountPath = '/mnt/console-data';

const problems = [];
let page;
await drive(shots, problems, () => page, async (browser) => {
  ({ page } = await newContext(browser, 'volumes', 'light', problems));
  await signIn(page);
  await createVolume(page);
  const id = await sandboxWithVolume(page);
  console.log(`SANDBOX ${id}`);
  await deleteMounted(page, id);
  await importTarball(page);
  await importRefused(page);
  await narrowPages(page);
});

async function signIn(page) {
  await page.goto(base + '/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await topNav(page).getByRole('button', { name: 'Sign out' }).waitFor();
  // Volumes for every key; Templates, where images are imported, for the
  // admin key this is.
  await navLink(page, 'Volumes').waitFor();
  await navLink(page, 'Templates').waitFor();
}

function volumeRow(page) {
  return page.getByRole('row').filter({ has: page.getByRole('cell', { name: volume, exact: true }) });
}

// createVolume: the form refuses a bad name and a size below 16 MiB
// inline, then makes the volume, which the list shows with its facts.
async function createVolume(page) {
  await navLink(page, 'Volumes').click();
  await page.getByRole('heading', { name: 'Volumes', level: 1 }).waitFor();
  await page.getByText('No volumes yet').waitFor();
  const form = page.getByRole('form', { name: 'New volume' });
  const name = form.getByLabel('Name', { exact: true });
  const size = form.getByLabel('Size (MiB)');
  await name.fill('-bad');
  await size.fill('8');
  // Left, a field says what is wrong with it (moving the button down):
  // leave it first, as a person would, so the click lands on the button.
  await size.blur();
  await form.getByRole('button', { name: 'Create volume' }).click();
  await form.locator('.field-error').filter({ hasText: 'must start with a letter or a digit' }).waitFor();
  await form.locator('.field-error').filter({ hasText: '8 MiB: a volume holds 16 MiB to 1 TiB' }).waitFor();
  must(await name.getAttribute('aria-invalid') === 'true', 'a bad volume name is not marked invalid');
  must(JSON.parse(await api('GET', '/v1/volumes')).volumes.length === 0, 'a volume was made from a bad form');
  await name.fill(volume);
  await size.fill('64');
  await form.getByRole('button', { name: 'Create volume' }).click();
  await page.getByRole('status').filter({ hasText: `Volume ${volume} created on local` }).waitFor();
  const row = volumeRow(page);
  await row.waitFor();
  const cells = (await row.getByRole('cell').allTextContents()).map((c) => c.trim());
  must(cells[1] === '64 MiB' && cells[2] === 'local' && /ago$/.test(cells[3]) && cells[4] === '—',
    `volume row ${JSON.stringify(cells)}, want 64 MiB on local, mounted by none`);
  const got = JSON.parse(await api('GET', `/v1/volumes/${volume}`));
  must(got.size_mb === 64 && got.node === 'local', `volume by the API: ${JSON.stringify(got)}`);
  await columnsAligned(page, 'volumes');
  await shots.take(page, 'volumes');
}

// sandboxWithVolume: the New sandbox form mounts the volume (a bad path
// is refused inline first) and sets the pause options: auto-resume, idle
// 10m then pause (the choice shows only once an idle timeout is set), at
// most 2h paused. The new sandbox's page lists the mount.
async function sandboxWithVolume(page) {
  await navLink(page, 'Sandboxes').click();
  await page.getByRole('button', { name: 'New sandbox' }).first().click();
  const form = page.getByRole('form', { name: 'New sandbox' });
  await form.getByRole('button', { name: 'Mount a volume' }).click();
  const row = form.getByRole('group', { name: 'Volume 1' });
  must(await row.getByLabel('Volume', { exact: true }).inputValue() === volume, 'the mount row did not pick the only volume');
  const at = row.getByLabel('Mounted at');
  must(await at.inputValue() === '/mnt/' + volume, `the mount row's path: ${await at.inputValue()}`);
  await at.fill('/proc/data');
  await at.blur();
  await row.locator('.field-error').filter({ hasText: 'a volume cannot go on or under /proc' }).waitFor();
  must(await at.getAttribute('aria-invalid') === 'true', 'a bad mount path is not marked invalid');
  await at.fill(mountPath);
  await row.locator('.field-error').waitFor({ state: 'detached' });

  await form.getByText('More limits').click();
  must(await form.getByLabel('When idle').count() === 0, '"When idle" is offered without an idle timeout');
  await form.getByLabel('Idle after').fill('10m');
  await form.getByLabel('When idle').selectOption('pause');
  await form.getByLabel('Max paused').fill('2h');
  await form.getByLabel('Auto-resume').check();
  await shots.take(page, 'create-form-volume');
  await form.getByRole('button', { name: 'Create sandbox' }).click();
  await page.waitForURL((u) => /^\/sandboxes\/[^/]+$/.test(u.pathname), { timeout: 60_000 });
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await page.getByRole('heading', { name: id }).first().waitFor();
  await page.locator('.details .chip').filter({ hasText: `${volume} → ${mountPath}` }).waitFor();

  const sb = JSON.parse(await api('GET', `/v1/sandboxes/${encodeURIComponent(id)}`));
  const want = { volumes: [{ name: volume, path: mountPath }], auto_resume: true, idle_action: 'pause', idle_timeout_s: 600, max_paused_s: 7200 };
  const got = { volumes: sb.volumes, auto_resume: sb.auto_resume, idle_action: sb.idle_action, idle_timeout_s: sb.idle_timeout_s, max_paused_s: sb.max_paused_s };
  must(JSON.stringify(got) === JSON.stringify(want), `sandbox by the API: ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  // The mount is real and writable: what the sandbox writes is on the volume.
  const r = JSON.parse(await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/exec`, {
    command: `echo from-console > ${mountPath}/f && cat ${mountPath}/f`,
  }));
  must(r.exit_code === 0 && r.stdout === 'from-console\n', `writing to the volume: ${JSON.stringify(r)}`);
  await shots.take(page, 'sandbox-with-volume');
  return id;
}

// deleteMounted: Delete asks, the server refuses with 409 naming the
// sandbox, the dialog says so and the volume stays; the list links the
// sandbox under "Mounted by". Once the sandbox is destroyed, Delete works.
async function deleteMounted(page, id) {
  await navLink(page, 'Volumes').click();
  const row = volumeRow(page);
  await row.getByRole('link', { name: id, exact: true }).waitFor();
  await row.getByRole('button', { name: `Delete ${volume}` }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('button', { name: 'Delete volume' }).click();
  await dialog.getByRole('alert').filter({ hasText: `volume ${volume} is mounted by ${id}` }).waitFor();
  await shots.take(page, 'delete-mounted');
  must(JSON.parse(await api('GET', '/v1/volumes')).volumes.some((v) => v.name === volume), 'the mounted volume is gone');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });

  await api('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`);
  await page.reload();
  await row.getByRole('cell', { name: '—', exact: true }).waitFor();
  await row.getByRole('button', { name: `Delete ${volume}` }).click();
  await dialog.getByRole('button', { name: 'Delete volume' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByText('No volumes yet').waitFor();
  must(JSON.parse(await api('GET', '/v1/volumes')).volumes.length === 0, 'the volume is still there after Delete');
}

// importTarball: the upload form sends the docker save tarball; each of
// its two layers gets a line (layer i/n, bytes of total) and a full bar,
// then the template is named, and listed with its source and digest.
async function importTarball(page) {
  await navLink(page, 'Templates').click();
  await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
  await page.getByRole('table').waitFor();
  const form = page.getByRole('form', { name: 'Import image' });
  await form.getByRole('radio', { name: 'Upload a file' }).check();
  const name = form.getByLabel('Template name');
  await name.fill('base');
  await name.blur();
  await form.getByRole('button', { name: 'Import image' }).click();
  await form.locator('.field-error').filter({ hasText: 'base is the built-in template' }).waitFor();
  await form.locator('.field-error').filter({ hasText: 'Pick the .tar file' }).waitFor();
  await name.fill(template);
  await form.getByLabel('Tarball').setInputFiles(tarball);
  await form.getByLabel('Description').fill('imported in the console test');
  // Record what the page shows at every change while the import runs,
  // to see progress arrive before the end: the answer comes through a
  // slow download (the upload is not slowed), so its events come apart
  // (from loopback at full speed they arrive in one read).
  await page.evaluate(() => {
    window.seen = [];
    new MutationObserver(() => {
      const lines = [...document.querySelectorAll('.layers li')].map((li) => li.textContent);
      window.seen.push({ lines, ended: !!document.querySelector('.import-progress .notice, .import-progress .alert') });
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 1024, uploadThroughput: -1 });
  await form.getByRole('button', { name: 'Import image' }).click();
  await form.getByRole('status').filter({ hasText: `Template ${template} imported` }).waitFor({ timeout: 120_000 });
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const layers = form.getByRole('list', { name: 'Layers' }).getByRole('listitem');
  must(await layers.count() === 2, `layers shown: ${await layers.allTextContents()}`);
  for (const [i, li] of (await layers.all()).entries()) {
    const text = await li.textContent();
    must(new RegExp(`^Layer ${i + 1}/2\\s*sha256:[0-9a-f]{12}.* of .*, done$`).test(text), `layer line ${i + 1}: ${JSON.stringify(text)}`);
    const bar = li.getByRole('progressbar', { name: `Layer ${i + 1} of 2` });
    const [value, max] = await bar.evaluate((el) => [el.value, el.max]);
    must(value === max, `layer ${i + 1}'s bar at ${value} of ${max} once done`);
  }
  // While it ran, before the end: layer 1 part read.
  const seen = await page.evaluate(() => window.seen.filter((s) => !s.ended && s.lines.length));
  must(seen.some((s) => s.lines.length === 1 && /^Layer 1\/2.* of /.test(s.lines[0]) && !s.lines[0].endsWith('done')),
    `no layer 1 part read shown before the end: ${JSON.stringify(seen.slice(0, 4))}`);
  await shots.take(page, 'template-imported');

  const row = page.getByRole('row').filter({ has: page.getByText(template, { exact: true }) });
  await row.waitFor();
  const t = JSON.parse(await api('GET', '/v1/templates')).templates.find((x) => x.name === template);
  must(t && t.from === 'image' && t.digest, `template by the API: ${JSON.stringify(t)}`);
  const cells = (await row.getByRole('cell').allTextContents()).map((c) => c.trim());
  must(cells[0] === template + 'imported in the console test' && cells[1] === 'image ' + t.image && t.digest.startsWith(cells[2]) && /ago$/.test(cells[4]),
    `template row ${JSON.stringify(cells)}, want ${JSON.stringify(t)}`);
  await columnsAligned(page, 'templates');
}

// importRefused: a registry on loopback the operator did not open: the
// server's error event is shown as it came, and nothing is listed.
async function importRefused(page) {
  const form = page.getByRole('form', { name: 'Import image' });
  await form.getByRole('radio', { name: 'From a registry' }).check();
  await form.getByLabel('Template name').fill(template + '-2');
  await form.getByLabel('Image', { exact: true }).fill('127.0.0.1:1/x/y:z');
  await form.getByRole('button', { name: 'Import image' }).click();
  await form.getByRole('alert').filter({ hasText: '127.0.0.1' }).waitFor({ timeout: 60_000 });
  must(await form.getByRole('status').count() === 0, 'a refused import says it imported');
  await shots.take(page, 'template-refused');
  must(!JSON.parse(await api('GET', '/v1/templates')).templates.some((x) => x.name === template + '-2'), 'the refused import made a template');
}

async function narrowPages(page) {
  await page.setViewportSize({ width: 420, height: 860 });
  for (const [path, heading] of [['/volumes', 'Volumes'], ['/templates', 'Templates']]) {
    await page.goto(base + path);
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    await page.waitForTimeout(300);
    await shots.take(page, 'narrow-' + path.slice(1));
    await fits(page, path);
    await columnsAligned(page, 'narrow ' + path);
  }
  await page.setViewportSize(viewport);
}
