// Charts drawn as plain SVG: a line chart for live samples and a stacked
// bar chart for usage. Each is an image with a text summary for screen
// readers, and a table-free legend.

const W = 640;

// niceMax rounds a maximum up to 1, 2, 2.5 or 5 times a power of ten;
// with binary, to a power of two (so an axis of bytes reads 256 KiB and
// 512 KiB, not 488 KiB).
function niceMax(v, binary) {
  if (binary) return Math.pow(2, Math.ceil(Math.log2(Math.max(v, 1024))));
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// LineChart plots points [{t: ms, v}] of one or more series.
export function LineChart({ label, series, format, height = 170, window: span, binary }) {
  const pad = { l: 56, r: 12, t: 12, b: 24 };
  const all = series.flatMap((s) => s.points);
  const now = all.length ? Math.max(...all.map((p) => p.t)) : Date.now();
  // The window grows with the data up to span, so the first samples do
  // not huddle at the right edge.
  const first = all.length ? Math.min(...all.map((p) => p.t)) : now - 30000;
  const shown = Math.min(span || Infinity, Math.max(30000, now - first));
  const t0 = now - shown;
  const max = niceMax(Math.max(0, ...all.map((p) => p.v)), binary);
  const x = (t) => pad.l + ((t - t0) / Math.max(1, now - t0)) * (W - pad.l - pad.r);
  const y = (v) => pad.t + (1 - v / max) * (height - pad.t - pad.b);
  const last = series.map((s) => s.points[s.points.length - 1]);
  const summary = label + ': ' + series.map((s, i) => `${s.name} ${last[i] ? format(last[i].v) : 'no data'}`).join(', ');
  return (
    <figure class="chart">
      <figcaption>
        <span>{label}</span>
        <span class="chart-now">{last[0] ? format(last[0].v) : '—'}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={summary}>
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line class="grid" x1={pad.l} x2={W - pad.r} y1={y(max * f)} y2={y(max * f)} />
            <text class="axis" x={pad.l - 8} y={y(max * f) + 4} text-anchor="end">
              {format(max * f)}
            </text>
          </g>
        ))}
        <text class="axis" x={pad.l} y={height - 6}>
          {shown >= 120000 ? `-${Math.round(shown / 60000)} min` : `-${Math.round(shown / 1000)}s`}
        </text>
        <text class="axis" x={W - pad.r} y={height - 6} text-anchor="end">
          now
        </text>
        {series.map((s, i) => {
          if (s.points.length === 0) return null;
          const d = s.points.map((p, j) => (j ? 'L' : 'M') + x(p.t).toFixed(1) + ',' + y(p.v).toFixed(1)).join(' ');
          const area = d + ` L${x(s.points[s.points.length - 1].t).toFixed(1)},${y(0)} L${x(s.points[0].t).toFixed(1)},${y(0)} Z`;
          return (
            <g key={s.name} class={'series s' + i}>
              <path class="area" d={area} />
              <path class="line" d={d} />
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

// BarChart stacks values per bucket: buckets [{label, values: {key: v}}],
// keys [{key, name}].
// With grouped, the bars of a bucket stand side by side (for maxima, which
// do not add up) instead of stacked.
export function BarChart({ label, buckets, keys, format, height = 190, grouped = false, total: totalOf, binary }) {
  const pad = { l: 60, r: 8, t: 12, b: 26 };
  const totals = buckets.map((b) =>
    grouped ? Math.max(0, ...keys.map((k) => b.values[k.key] || 0)) : keys.reduce((a, k) => a + (b.values[k.key] || 0), 0),
  );
  const max = niceMax(Math.max(0, ...totals), binary);
  const inner = W - pad.l - pad.r;
  const bw = inner / Math.max(1, buckets.length);
  const y = (v) => pad.t + (1 - v / max) * (height - pad.t - pad.b);
  const total = totalOf !== undefined ? totalOf : grouped ? Math.max(0, ...totals) : totals.reduce((a, b) => a + b, 0);
  const every = Math.ceil(buckets.length / 8);
  return (
    <figure class="chart">
      <figcaption>
        <span>{label}</span>
        <span class="chart-now">{format(total)}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={`${label}: ${format(total)} ${grouped ? 'at most' : 'in total'}`}>
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line class="grid" x1={pad.l} x2={W - pad.r} y1={y(max * f)} y2={y(max * f)} />
            <text class="axis" x={pad.l - 8} y={y(max * f) + 4} text-anchor="end">
              {format(max * f)}
            </text>
          </g>
        ))}
        {buckets.map((b, i) => {
          let acc = 0;
          return (
            <g key={i}>
              <title>{b.label + ': ' + keys.map((k) => `${k.name} ${format(b.values[k.key] || 0)}`).join(', ')}</title>
              <rect class="hover" x={pad.l + i * bw} y={pad.t} width={bw} height={height - pad.t - pad.b} />
              {keys.map((k, j) => {
                const v = b.values[k.key] || 0;
                if (!v) return null;
                if (grouped) {
                  const w = (bw * 0.7) / keys.length;
                  return <rect key={k.key} class={'bar s' + (j % 6)} x={pad.l + i * bw + bw * 0.15 + j * w} y={y(v)} width={w} height={Math.max(y(0) - y(v), 0.5)} rx="2" />;
                }
                const top = y(acc + v);
                const h = y(acc) - top;
                acc += v;
                return <rect key={k.key} class={'bar s' + (j % 6)} x={pad.l + i * bw + bw * 0.15} y={top} width={bw * 0.7} height={Math.max(h, 0.5)} rx="2" />;
              })}
              {i % every === 0 && (
                <text class="axis" x={pad.l + i * bw + bw / 2} y={height - 8} text-anchor="middle">
                  {b.short}
                </text>
              )}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

export function Legend({ keys }) {
  return (
    <ul class="legend" aria-label="Legend">
      {keys.map((k, j) => (
        <li key={k.key}>
          <span class={'swatch s' + (j % 6)} aria-hidden="true" />
          {k.name}
        </li>
      ))}
    </ul>
  );
}
