// The console's own "nothing here" page, for paths it does not know.
import { must, navLink, viewport } from './browser.mjs';
import { fits } from './layout.mjs';

// notFound: a path the console does not know, sent by the server (a 404
// with the app) or reached inside the app, shows its "nothing here" page
// with the navigation, not an API error or another page.
export async function notFound(page, base, shots, id) {
  const res = await page.goto(base + '/nothing-here');
  must(res.status() === 404 && res.headers()['content-type'].startsWith('text/html'),
    `GET /nothing-here in the browser: ${res.status()} ${res.headers()['content-type']}, want 404 and the console`);
  await page.getByRole('heading', { name: 'Nothing here' }).waitFor();
  await navLink(page, 'Sandboxes').waitFor();
  await shots.take(page, 'not-found');
  for (const path of [`/sandboxes/${id}/no-such-tab`, '/secrets/extra', '/sandboxes/a/b/c']) {
    await page.goto(base + path);
    await page.getByRole('heading', { name: 'Nothing here' }).waitFor();
    must(await page.getByRole('tablist').count() === 0, `${path} shows a sandbox page`);
  }
  await page.getByRole('link', { name: 'Go to the sandboxes' }).click();
  await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
}

export async function notFoundSignedOut(page, base, shots) {
  await page.goto(base + '/nothing-here');
  await page.getByRole('heading', { name: 'Nothing here' }).waitFor();
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.getByLabel('API key').waitFor();
  await page.setViewportSize({ width: 420, height: 860 });
  await shots.take(page, 'narrow-sign-in');
  await fits(page, 'sign-in');
  await page.setViewportSize(viewport);
}
