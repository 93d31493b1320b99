// How the console reads volumes and the create form's mounts and pause
// options, with the server's rules (sandbox/volumes.go, create.go) so a
// form says what is wrong before it sends: volume names, sizes, mount
// paths, and which sandboxes mount a volume. pages/volumes.jsx and
// pages/mounts.jsx show them.
import { parseSeconds } from './duration.js';
import { snapshotNameError } from './lifecycle.js';

// Volume sizes the server takes, in MiB (runtime.MinDiskMB, MaxVolumeMB).
export const MIN_VOLUME_MB = 16;
export const MAX_VOLUME_MB = 1 << 20;

// MAX_MOUNTS is the most volumes one sandbox mounts.
export const MAX_MOUNTS = 8;

// MAX_PAUSED_S is the longest max_paused_s (30 days); the default is 7.
export const MAX_PAUSED_S = 30 * 86400;

// volumeNameError: a volume is named as a snapshot is (1-63 of letters,
// digits, '.', '_' and '-', starting with a letter or digit), but the
// name cannot be left to the server.
export function volumeNameError(name) {
  if (name.trim() === '') return 'Give the volume a name: sandboxes mount it by that name';
  return snapshotNameError(name);
}

// volumeSizeError is what is wrong with the size field (MiB), or null.
export function volumeSizeError(text) {
  const s = String(text).trim();
  if (!/^\d+$/.test(s)) return s === '' ? 'Give a size in MiB' : `"${s}" is not a whole number of MiB`;
  const n = Number(s);
  if (n < MIN_VOLUME_MB || n > MAX_VOLUME_MB) return `${n} MiB: a volume holds ${MIN_VOLUME_MB} MiB to 1 TiB (${MAX_VOLUME_MB} MiB)`;
  return null;
}

// cleanPath is path.Clean of an absolute path: no empty, "." or ".."
// parts, no trailing slash.
export function cleanPath(p) {
  const out = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return '/' + out.join('/');
}

// System places a volume cannot go on; it cannot go under them either,
// except under / and /home (so /home/user/data is fine).
const NOT_ON = ['/', '/proc', '/sys', '/dev', '/tmp', '/usr', '/etc', '/bin', '/sbin', '/lib', '/lib64', '/home', '/home/user', '/var/tmp'];
const OPEN_BELOW = new Set(['/', '/home', '/home/user']);

// mountPathError is what is wrong with where a volume is mounted, or null.
export function mountPathError(p) {
  const s = p.trim();
  if (s === '') return 'Give the path it is mounted at, such as /mnt/data';
  if (!s.startsWith('/')) return `${s}: want an absolute path, such as /mnt/data`;
  const c = cleanPath(s);
  for (const no of NOT_ON) {
    if (c === no || (!OPEN_BELOW.has(no) && c.startsWith(no + '/'))) {
      return `${s}: a volume cannot go on ${c === no ? '' : 'or under '}${no}`;
    }
  }
  return null;
}

// mountErrors checks the form's mounts ([{name, path, read_only}]): the
// error of each row's path (by index), and one for the whole list (too
// many, a volume or path twice).
export function mountErrors(mounts) {
  const paths = mounts.map((m) => mountPathError(m.path));
  let list = null;
  if (mounts.length > MAX_MOUNTS) list = `${mounts.length} volumes: a sandbox mounts at most ${MAX_MOUNTS}`;
  const names = new Set();
  const at = new Set();
  mounts.forEach((m, i) => {
    if (!m.name) list = list || `Row ${i + 1} has no volume picked`;
    else if (names.has(m.name)) list = list || `Volume ${m.name} is mounted twice: once per sandbox`;
    names.add(m.name);
    if (!paths[i]) {
      const c = cleanPath(m.path.trim());
      if (at.has(c)) paths[i] = `Another volume is mounted at ${c}`;
      at.add(c);
    }
  });
  return { paths, list, ok: !list && paths.every((e) => !e) };
}

// mountsBody is the create request's "volumes": the rows as the API takes
// them, undefined for none.
export function mountsBody(mounts) {
  if (!mounts.length) return undefined;
  return mounts.map((m) => ({ name: m.name, path: cleanPath(m.path.trim()), ...(m.read_only ? { read_only: true } : {}) }));
}

// pauseBody is the create request's pause options from the form:
// auto_resume, idle_action (only with an idle timeout, which "pause"
// needs: idle says one is set) and max_paused_s (a duration field, empty
// for the 7-day default). It throws, as parseSeconds does, on a bad max
// paused.
export function pauseBody({ autoResume, idle, idleAction, maxPaused }) {
  const out = {};
  if (autoResume) out.auto_resume = true;
  if (idle && idleAction === 'pause') out.idle_action = 'pause';
  const max = parseSeconds(maxPaused, { max: MAX_PAUSED_S });
  if (max !== undefined) out.max_paused_s = max;
  return out;
}

// mountedBy are the ids of the sandboxes in list that mount volume name.
export function mountedBy(list, name) {
  return list.filter((s) => (s.volumes || []).some((v) => v.name === name)).map((s) => s.id);
}
