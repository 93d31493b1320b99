// Metering: a sandbox's usage, several at once, the tenant's report and
// the server's Prometheus text.
import assert from "node:assert/strict";
import { test } from "node:test";
import { airlock, sandbox } from "./env.js";

test("metrics and usage", async () => {
  const since = new Date(Date.now() - 1000);
  const sb = await sandbox();
  await sb.exec("true");
  await sb.exec("true");
  const m = await sb.metrics();
  assert.equal(m.sandbox_id, sb.id);
  assert.equal(m.exec_count, 2);
  assert.equal(m.final, false);
  const h = await sb.metricsHistory();
  assert.equal(h.sandbox_id, sb.id);
  assert.ok(Array.isArray(h.samples));
  const many = await airlock.sandboxes.metrics([sb.id, "sb-not-mine"]);
  assert.deepEqual(many.map((x) => x.sandbox_id), [sb.id]);

  await sb.delete();
  const final = await sb.metrics();
  assert.equal(final.final, true);
  assert.equal(final.exec_count, 2);

  const report = await airlock.usage({ from: since });
  const execs = report.tenants.reduce((n, t) => n + t.exec_count, 0);
  assert.ok(execs >= 2, `usage since ${since.toISOString()}: ${JSON.stringify(report)}`);
  assert.match(await airlock.prometheusMetrics(), /^airlock_sandbox_create_duration_seconds/m);
});
