// How the console writes numbers, sizes and times.

export function bytes(n) {
  if (n === undefined || n === null || isNaN(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
}

// duration writes seconds the short way: 45s, 3m 20s, 2h 5m, 3d 4h.
export function duration(s) {
  if (s === undefined || s === null || isNaN(s)) return '—';
  s = Math.max(0, Math.floor(s));
  if (s < 60) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + (s % 60) + 's';
  const h = Math.floor(m / 60);
  if (h < 24) return h + 'h ' + (m % 60) + 'm';
  return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
}

export function age(t, now = Date.now()) {
  return duration((now - Date.parse(t)) / 1000);
}

export function timeLeft(t, now = Date.now()) {
  const s = (Date.parse(t) - now) / 1000;
  return s <= 0 ? 'expired' : duration(s);
}

export function dateTime(t) {
  if (!t) return '—';
  const d = new Date(t);
  if (isNaN(d)) return t;
  return d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

export function clock(t) {
  const d = new Date(t);
  if (isNaN(d)) return t;
  return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function number(n, digits = 2) {
  if (n === undefined || n === null || isNaN(n)) return '—';
  return Number(n).toLocaleString(undefined, { maximumFractionDigits: digits });
}

// usd is a cost in US dollars: cents and below with up to 4 significant
// digits (model calls cost fractions of a cent).
export function usd(v) {
  if (v === undefined || v === null || isNaN(v)) return '—';
  if (v === 0) return '$0';
  if (Math.abs(v) >= 1) return '$' + v.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return '$' + Number(v.toPrecision(4)).toString();
}

// tokens sums what model calls used (model totals of the API).
export function tokens(m) {
  if (!m) return null;
  return m.input_tokens + m.cached_input_tokens + m.output_tokens;
}

export function percent(v) {
  if (v === undefined || v === null || isNaN(v)) return '—';
  return (v * 100).toFixed(v < 0.1 ? 1 : 0) + '%';
}

// splitList reads names separated by commas, spaces or new lines.
export function splitList(s) {
  return s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);
}

// parseMetadata reads key=value lines; it throws on a line without '='.
export function parseMetadata(s) {
  const out = {};
  for (const raw of s.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw new Error(`Metadata line "${line}" is not key=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}
