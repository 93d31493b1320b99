// Every page of the console at a phone's width.
import { viewport } from './browser.mjs';
import { columnsAligned, fits } from './layout.mjs';

// narrow: every page at 420 px wide, a phone's width: no sideways scroll,
// nothing cut off (tables and tab strips scroll in their own box), table
// headers over their columns. Each page is photographed.
export async function narrow(page, base, shots, id, deniedHost) {
  await page.setViewportSize({ width: 420, height: 860 });
  const sb = `/sandboxes/${encodeURIComponent(id)}`;
  const check = async (name) => {
    await shots.take(page, 'narrow-' + name);
    await fits(page, name);
    await columnsAligned(page, name);
  };
  await page.goto(base + '/sandboxes');
  await page.getByRole('link', { name: id }).waitFor();
  await check('sandboxes');
  await page.getByRole('button', { name: 'New sandbox' }).click();
  await page.getByRole('form', { name: 'New sandbox' }).getByText('More limits').click();
  await check('create-form');
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  for (const [t, ready] of [
    ['overview', () => page.locator('[role=tabpanel] figure.chart').first().waitFor()],
    ['processes', () => page.getByRole('tabpanel').locator('table, .empty').first().waitFor()],
    ['files', () => page.getByRole('cell', { name: 'console-upload.bin', exact: true }).waitFor()],
    ['network', () => page.getByRole('row').filter({ hasText: deniedHost }).first().waitFor()],
    ['audit', () => page.getByRole('row').filter({ hasText: 'sandbox.created' }).first().waitFor()],
  ]) {
    await page.goto(base + sb + '/' + t);
    await ready();
    await check(t);
  }
  await page.goto(base + sb + '/terminal');
  await page.getByRole('button', { name: 'Attach' }).first().click();
  await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent || '').includes('$'));
  await check('terminal');
  await page.goto(base + sb + '/replay');
  await page.getByRole('row').filter({ hasText: 'echo replay-14' }).getByRole('button', { name: 'Play' }).click();
  await page.locator('.player-panel .ap-wrapper, .player-panel .ap-player').first().waitFor();
  await check('replay');
  for (const [path, heading] of [['/secrets', 'Secrets'], ['/usage', 'Usage'], ['/admin', 'Keys & tenants'], ['/nothing-here', 'Nothing here']]) {
    await page.goto(base + path);
    await page.getByRole('heading', { name: heading }).waitFor();
    if (path === '/usage') await page.getByRole('img', { name: /^CPU-seconds/ }).first().waitFor();
    await check(path.slice(1));
  }
  await page.setViewportSize(viewport);
}
