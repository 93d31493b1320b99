// How the console reads a sandbox's lifecycle: what each state allows
// (a paused sandbox keeps its processes frozen, so it can be resumed,
// snapshotted, forked or destroyed, but runs nothing), how long it has
// been paused, where it came from (a snapshot, a fork), and the 409
// "paused" a call that needs it running gets.
import { duration, timeLeft } from './format.js';

// LIVE are the states in which a sandbox holds its processes.
const LIVE = new Set(['creating', 'running', 'paused', 'unreachable']);

export function isLive(state) {
  return LIVE.has(state);
}

// actions says which of a sandbox's actions its state allows. Extend
// needs it running: a paused sandbox's lifetime clock is stopped, and the
// server refuses a new timeout until it resumes.
export function actions(state) {
  const up = state === 'running' || state === 'paused';
  return {
    pause: state === 'running',
    resume: state === 'paused',
    snapshot: up,
    fork: up,
    extend: state === 'running',
    destroy: state !== 'stopped',
  };
}

// pausedFor is how long sb has been paused ("3m 20s"), or '' when it is
// not paused.
export function pausedFor(sb, now = Date.now()) {
  if (sb.state !== 'paused' || !sb.paused_at) return '';
  return duration((now - Date.parse(sb.paused_at)) / 1000);
}

// lifeLeft is the list's "Time left" of sb. A paused sandbox's clock is
// stopped: what is left waits until it resumes.
export function lifeLeft(sb, now = Date.now()) {
  if (sb.state === 'running' || sb.state === 'creating') return timeLeft(sb.expires_at, now);
  if (sb.state === 'paused') return 'clock stopped';
  return '—';
}

// pauseDeadline says when a paused sandbox is destroyed if nobody resumes
// it: while paused, expires_at is the end of its max_paused_s.
export function pauseDeadline(sb, now = Date.now()) {
  if (sb.state !== 'paused') return '';
  const left = timeLeft(sb.expires_at, now);
  return left === 'expired' ? 'destroyed as expired any moment now' : `destroyed in ${left} unless resumed`;
}

// pausedMessage is what a tab that needs the sandbox running says while
// it is paused: "terminal", "files", ...
export function pausedMessage(what) {
  return `This sandbox is paused — resume to use the ${what}.`;
}

// explain is what to show for err, an API error, from a tab for what: a
// 409 "paused" (the sandbox was paused after the page last looked) says
// so in words, anything else as it came.
export function explain(err, what) {
  if (err && err.code === 'paused') return pausedMessage(what);
  return err;
}

// origins is where sb came from: the snapshot it was made from and the
// sandbox it was forked from, each with the console page that shows it.
export function origins(sb) {
  const out = [];
  if (sb.snapshot) out.push({ label: 'From snapshot', name: sb.snapshot, href: '/snapshots?name=' + encodeURIComponent(sb.snapshot) });
  if (sb.fork_of) out.push({ label: 'Fork of', name: sb.fork_of, href: '/sandboxes/' + encodeURIComponent(sb.fork_of) });
  return out;
}

// MAX_FORKS is the most sandboxes one fork makes (the server's MaxForks).
export const MAX_FORKS = 50;

// parseForkCount reads the fork form's count: a whole number from 1 to
// MAX_FORKS; it throws saying what is wrong with anything else.
export function parseForkCount(text) {
  const s = String(text).trim();
  if (!/^\d+$/.test(s)) throw new Error(`"${s}" is not a whole number: fork 1 to ${MAX_FORKS} sandboxes`);
  const n = Number(s);
  if (n < 1 || n > MAX_FORKS) throw new Error(`${n} forks: make 1 to ${MAX_FORKS} at a time`);
  return n;
}

// snapshotNameError is what is wrong with a snapshot name as the server
// reads it (1-63 of letters, digits, '.', '_' and '-', starting with a
// letter or digit), or null. Empty is fine: the server picks a name.
export function snapshotNameError(name) {
  const s = name.trim();
  if (s === '') return null;
  if (s.length > 63) return `The name is ${s.length} characters long: at most 63`;
  if (!/^[A-Za-z0-9]/.test(s)) return 'The name must start with a letter or a digit';
  const bad = s.match(/[^A-Za-z0-9._-]/);
  if (bad) return `"${bad[0]}" cannot be in a name: letters, digits, '.', '_' and '-' only`;
  return null;
}

// countLabel is the list's count for the view it shows: "3 stopped
// sandboxes", or, where running and paused ones are listed together,
// "3 sandboxes: 2 running, 1 paused".
export function countLabel(list, view, viewName) {
  const n = list.length;
  const noun = n === 1 ? 'sandbox' : 'sandboxes';
  if (view === 'all') return `${n} ${noun}`;
  const paused = list.filter((s) => s.state === 'paused').length;
  if (view === 'running' && paused > 0) return `${n} ${noun}: ${n - paused} running, ${paused} paused`;
  return `${n} ${viewName.toLowerCase()} ${noun}`;
}
