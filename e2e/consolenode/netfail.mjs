// The network log's failed upstream connections, in the real page.
import { must, tab } from './browser.mjs';

// failedUpstream: a connection the policy allowed whose upstream failed is
// shown as failed, with the reason on hover and on click, not as a green
// "allowed". The egress proxy marks such events with upstream_error; until
// this server sets it, the test serves the log with one such event added,
// modelled on the real allowed one, to the real page. The route stays
// honest: it adds one event to the server's own answer.
export async function failedUpstream(page, id, deniedHost) {
  const failedHost = 'nxdomain.console.test';
  const failure = 'lookup nxdomain.console.test: no such host';
  const logURL = (u) => new URL(u).pathname === `/v1/sandboxes/${id}/network/log`;
  let served = false;
  await page.route(logURL, async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    const real = body.events.find((e) => e.host === deniedHost && e.decision === 'allowed');
    if (!new URL(route.request().url()).searchParams.get('after') && real) {
      const seq = Math.max(...body.events.map((e) => e.seq)) + 1;
      body.events.push({ ...real, seq, host: failedHost, rule: failedHost, addr: undefined, status: undefined, bytes_up: 0, bytes_down: 0,
        upstream_error: 'dns', reason: failure });
      served = true;
    }
    await route.fulfill({ response: res, json: body });
  });
  try {
    await tab(page, 'Overview').click();
    await tab(page, 'Network').click();
    const failed = page.getByRole('row').filter({ hasText: failedHost });
    await failed.first().waitFor();
    must(served, 'the network log was not asked for from the start');
    const badge = failed.getByRole('button', { name: 'failed: dns', exact: true });
    await badge.waitFor();
    must(await failed.getByRole('cell', { name: 'allowed', exact: true }).count() === 0, `${failedHost} shows as allowed`);
    must(await badge.getAttribute('title') === failure, `the failed badge's title: ${await badge.getAttribute('title')}`);
    const color = await badge.evaluate((b) => getComputedStyle(b).color);
    const green = await page.getByRole('cell', { name: 'allowed', exact: true }).first().evaluate((c) => getComputedStyle(c.firstElementChild).color);
    must(color !== green, `the failed badge has the allowed badge's colour ${green}`);
    await badge.press('Enter'); // by keyboard: the reason opens below the row
    must(await badge.getAttribute('aria-expanded') === 'true', 'the failed badge does not open');
    await page.locator('tr.expanded').filter({ hasText: failure }).waitFor();
    await page.getByLabel('Decision').selectOption('failed');
    await page.waitForFunction((h) => {
      const rows = [...document.querySelectorAll('tbody tr:not(.expanded)')];
      return rows.length === 1 && rows[0].textContent.includes(h);
    }, failedHost);
    await page.getByLabel('Decision').selectOption('allowed');
    await page.waitForFunction((h) => ![...document.querySelectorAll('tbody tr')].some((r) => r.textContent.includes(h)), failedHost);
    await page.getByLabel('Decision').selectOption('');
    await failed.first().waitFor();
  } finally {
    await page.unroute(logURL);
  }
}
