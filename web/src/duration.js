// Durations as the CLI takes them: the console's duration fields read
// exactly what Go's time.ParseDuration reads (airlock create --timeout
// 1h30m), so a value that works in one works in the other.

const NS = 1n;
const units = {
  ns: NS,
  us: 1000n,
  'µs': 1000n, // U+00B5 micro sign
  'μs': 1000n, // U+03BC Greek mu
  ms: 1000000n,
  s: 1000000000n,
  m: 60n * 1000000000n,
  h: 3600n * 1000000000n,
};
const MAX = (1n << 63n) - 1n;

// parseGoDuration returns the nanoseconds (a BigInt) that Go's
// time.ParseDuration returns for s, or throws an Error whose message says
// what is wrong, as a person should read it.
export function parseGoDuration(s) {
  const orig = s;
  const bad = () => new Error(`"${orig}" is not a duration: write one such as 90s, 10m or 1h30m`);
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw bad();
  let d = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || (s[0] >= '0' && s[0] <= '9'))) throw bad();
    // [0-9]*
    let i = 0;
    let v = 0n;
    while (i < s.length && s[i] >= '0' && s[i] <= '9') {
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > 1n << 63n) throw bad(); // overflow, as Go's leadingInt
      i++;
    }
    const pre = i > 0;
    s = s.slice(i);
    // (\.[0-9]*)?
    let post = false;
    let f = 0n;
    let scale = 1;
    if (s !== '' && s[0] === '.') {
      s = s.slice(1);
      let j = 0;
      let overflow = false;
      while (j < s.length && s[j] >= '0' && s[j] <= '9') {
        // Go stops adding digits once they would overflow, and reads on.
        if (!overflow) {
          const y = f * 10n + BigInt(s.charCodeAt(j) - 48);
          if (y > 1n << 63n) overflow = true;
          else {
            f = y;
            scale *= 10;
          }
        }
        j++;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) throw bad(); // no digits, as in ".s"
    // The unit: everything up to the next number.
    let k = 0;
    while (k < s.length && s[k] !== '.' && !(s[k] >= '0' && s[k] <= '9')) k++;
    if (k === 0) {
      throw new Error(`"${orig}" has no unit: write ${orig}s for seconds, or a duration such as 10m or 1h30m`);
    }
    const u = s.slice(0, k);
    s = s.slice(k);
    const unit = units[u];
    if (unit === undefined && /\s/.test(u)) {
      throw new Error(`"${orig}": a duration has no spaces (write e.g. 1h30m)`);
    }
    if (unit === undefined) {
      throw new Error(`"${orig}": unknown unit "${u}" (use h, m, s or ms, e.g. 1h30m)`);
    }
    if (v > (1n << 63n) / unit) throw bad();
    v *= unit;
    if (f > 0n) {
      // As Go: float64(f) * (float64(unit) / scale), truncated.
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > 1n << 63n) throw bad();
    }
    d += v;
    if (d > 1n << 63n) throw bad();
  }
  if (neg) return -d;
  if (d > MAX) throw bad();
  return d;
}

// parseSeconds reads a duration field: whole seconds, rounded up as the
// Go client sends them (undefined for an empty field). It throws when the
// text is not a duration, or is not within (0, max] seconds; with
// allowZero, 0 is accepted (an idle timeout of 0 is none).
export function parseSeconds(text, { max = 86400, allowZero = false } = {}) {
  const s = text.trim();
  if (s === '') return undefined;
  const ns = parseGoDuration(s);
  if (ns < 0n) throw new Error(`"${s}" is negative: a duration counts from now`);
  if (ns === 0n) {
    if (allowZero) return 0;
    throw new Error(`"${s}" would end it at once: leave the field empty for the default`);
  }
  const secs = (ns + 999999999n) / 1000000000n;
  if (secs > BigInt(max)) throw new Error(`"${s}" is longer than the ${short(max)} maximum`);
  return Number(secs);
}

// short writes whole seconds as a Go duration would ("24h", "1h30m", "90s"
// reads as "1m30s").
export function short(secs) {
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = secs % 60;
  return (h ? h + 'h' : '') + (m ? m + 'm' : '') + (s || (!h && !m) ? s + 's' : '');
}
