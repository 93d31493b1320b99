// Usage over time. The API sums a window per tenant (sandboxes created in
// it, each counted whole), so a chart is one request per bucket.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Empty, ErrorText, Loading, usePoll } from '../ui/kit.jsx';
import { BarChart, Legend } from '../ui/chart.jsx';
import { bytes, number, tokens, usd } from '../format.js';

const RANGES = {
  '24h': { label: 'Last 24 hours', n: 24, unit: 3600e3 },
  '7d': { label: 'Last 7 days', n: 7, unit: 86400e3 },
  '30d': { label: 'Last 30 days', n: 30, unit: 86400e3 },
};

// buckets cuts the range into whole hours or days (local time), the last
// one ending now.
function bucketsOf(r) {
  const now = new Date();
  const start = new Date(now);
  if (r.unit === 3600e3) start.setMinutes(0, 0, 0);
  else start.setHours(0, 0, 0, 0);
  const out = [];
  for (let i = r.n - 1; i >= 0; i--) {
    const from = new Date(start);
    if (r.unit === 3600e3) from.setHours(from.getHours() - i);
    else from.setDate(from.getDate() - i);
    const to = new Date(from);
    if (r.unit === 3600e3) to.setHours(to.getHours() + 1);
    else to.setDate(to.getDate() + 1);
    out.push({
      from,
      to: to > now ? null : to,
      label: r.unit === 3600e3
        ? from.toLocaleString(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' })
        : from.toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' }),
      short: r.unit === 3600e3
        ? from.toLocaleTimeString(undefined, { hour: '2-digit' })
        : from.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }),
    });
  }
  return out;
}

export function Usage({ session }) {
  const [range, setRange] = useState('7d');
  const [data, setData] = useState(null);
  const [err, setErr] = useState(null);
  const [names, setNames] = useState({});

  usePoll(
    async (signal) => {
      try {
        const r = RANGES[range];
        const bs = bucketsOf(r);
        const q = (b) => ({ from: b.from.toISOString(), to: b.to ? b.to.toISOString() : undefined });
        const [per, total, tenants] = await Promise.all([
          Promise.all(bs.map((b) => api('/v1/usage', { query: q(b), signal }))),
          api('/v1/usage', { query: { from: bs[0].from.toISOString() }, signal }),
          session.admin ? api('/v1/tenants', { signal }).catch(() => ({ tenants: [] })) : Promise.resolve({ tenants: [] }),
        ]);
        const n = { [session.tenant_id]: session.tenant };
        for (const t of tenants.tenants) n[t.id] = t.name;
        setNames(n);
        setData({ buckets: bs.map((b, i) => ({ ...b, tenants: per[i].tenants })), total: total.tenants });
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    60000,
    [range],
  );

  const ids = data ? [...new Set(data.total.map((t) => t.tenant_id).concat(data.buckets.flatMap((b) => b.tenants.map((t) => t.tenant_id))))] : [];
  const keys = ids.map((id) => ({ key: id, name: names[id] || id }));
  const series = (f) =>
    data.buckets.map((b) => ({ label: b.label, short: b.short, values: Object.fromEntries(b.tenants.map((t) => [t.tenant_id, f(t)])) }));
  const active = data && data.total.some((t) => t.sandboxes > 0);
  const priced = data && data.total.some((t) => t.cost_usd);

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Usage</h1>
          <p class="muted">
            {session.admin ? 'Every tenant' : 'Your tenant'}: the sandboxes created in each {RANGES[range].unit === 3600e3 ? 'hour' : 'day'}, each
            counted whole (running ones with their usage so far).
          </p>
        </div>
        <div class="field inline">
          <label for="range">Period</label>
          <select id="range" class="input" value={range} onChange={(e) => { setData(null); setRange(e.currentTarget.value); }}>
            {Object.entries(RANGES).map(([k, r]) => (
              <option key={k} value={k}>{r.label}</option>
            ))}
          </select>
        </div>
      </div>
      <ErrorText error={err} />
      {!data ? (
        !err && <Loading />
      ) : (
        <div class="stack-lg">
          {!active && (
            <Empty title="No usage in this period" icon="chart">
              No sandbox was created in the {RANGES[range].label.toLowerCase()}.
            </Empty>
          )}
          {keys.length > 1 && <Legend keys={keys} />}
          <div class="charts2">
            <BarChart label="CPU-seconds" buckets={series((t) => t.cpu_seconds)} keys={keys} format={(v) => number(v, 2) + ' s'} />
            <BarChart label="Memory (highest peak)" grouped buckets={series((t) => t.memory_peak_bytes)} keys={keys} format={bytes} binary />
            <BarChart label="Egress" buckets={series((t) => t.egress_bytes_out + t.egress_bytes_in)} keys={keys} format={bytes} binary />
            <BarChart label="Sandbox-hours" buckets={series((t) => t.sandbox_hours)} keys={keys} format={(v) => number(v, 2) + ' h'} />
            <BarChart label="Model tokens" buckets={series((t) => tokens(t.model) || 0)} keys={keys} format={(v) => number(v, 0)} />
            {priced && <BarChart label="Cost" buckets={series((t) => (t.cost_usd ? t.cost_usd.total : 0))} keys={keys} format={usd} />}
          </div>
          <div class="table-wrap">
            <table class="table">
              <caption class="table-caption">Totals, {RANGES[range].label.toLowerCase()}</caption>
              <thead>
                <tr>
                  <th scope="col">Tenant</th>
                  <th scope="col" class="num">Sandboxes</th>
                  <th scope="col" class="num">Sandbox-hours</th>
                  <th scope="col" class="num">CPU-seconds</th>
                  <th scope="col" class="num">Memory peak</th>
                  <th scope="col" class="num">Egress out</th>
                  <th scope="col" class="num">Egress in</th>
                  <th scope="col" class="num">Commands</th>
                  <th scope="col" class="num">Model calls</th>
                  <th scope="col" class="num">Model tokens</th>
                  <th scope="col" class="num">Cost</th>
                </tr>
              </thead>
              <tbody>
                {data.total.map((t) => (
                  <tr key={t.tenant_id}>
                    <td>
                      <span class="strong">{names[t.tenant_id] || t.tenant_id}</span>
                      <div class="muted small mono">{t.tenant_id}</div>
                    </td>
                    <td class="num">{number(t.sandboxes, 0)}</td>
                    <td class="num">{number(t.sandbox_hours, 2)}</td>
                    <td class="num">{number(t.cpu_seconds, 1)}</td>
                    <td class="num">{bytes(t.memory_peak_bytes)}</td>
                    <td class="num">{bytes(t.egress_bytes_out)}</td>
                    <td class="num">{bytes(t.egress_bytes_in)}</td>
                    <td class="num">{number(t.exec_count, 0)}</td>
                    <td class="num">{number(t.model.calls, 0)}</td>
                    <td class="num" title={`${number(t.model.input_tokens, 0)} in · ${number(t.model.cached_input_tokens, 0)} cached · ${number(t.model.output_tokens, 0)} out`}>{number(tokens(t.model), 0)}</td>
                    <td class="num" title={t.cost_usd ? `model ${usd(t.cost_usd.model)} · compute ${usd(t.cost_usd.compute)}` : 'no price table on this server'}>{t.cost_usd ? usd(t.cost_usd.total) : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </div>
  );
}
