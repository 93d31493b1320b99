// The tenant's pending approvals, polled once for the whole app: the
// header's badge and the Approvals page read the same answer, so a tab
// asks once a second however many parts of it read, and a hidden tab does
// not ask at all (it asks again the moment it is shown). The console
// follows no event stream; a one-second poll keeps a new question in
// sight within the two seconds a sandbox's held request is worth.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

export const PENDING_POLL = 1000;

// A server without an approvals service answers 503 to every poll: ask
// it rarely.
const UNAVAILABLE_POLL = 30000;

const readers = new Set();
let state = { list: null, error: null };
let seen = ''; // state as JSON: an unchanged answer re-renders nothing
let timer = 0;
let ctl = null; // the poll in flight

function publish(next) {
  const key = JSON.stringify([next.list, next.error && next.error.message]);
  if (key === seen) return;
  seen = key;
  state = next;
  readers.forEach((f) => f(next));
}

// poll asks now, in place of any poll in flight (whose answer may predate
// a decision just made), and schedules the next.
async function poll() {
  clearTimeout(timer);
  timer = 0;
  if (ctl) ctl.abort();
  ctl = null;
  if (!readers.size || document.visibilityState === 'hidden') return;
  const mine = (ctl = new AbortController());
  let wait = PENDING_POLL;
  try {
    const r = await api('/v1/approvals', { query: { state: 'pending' }, signal: mine.signal });
    publish({ list: r.approvals, error: null });
  } catch (e) {
    if (e.name === 'AbortError') return; // a newer poll, or nobody reads
    if (e.status === 503) wait = UNAVAILABLE_POLL;
    publish({ list: e.status === 503 ? null : state.list, error: e });
  }
  if (ctl !== mine) return;
  ctl = null;
  if (readers.size) timer = setTimeout(poll, wait);
}

// refreshPending asks at once: after a decision, so its card goes now.
export function refreshPending() {
  poll();
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && readers.size) poll();
});

// usePending is {list, error}: the pending approvals (null until the
// first answer), and the last poll's error.
export function usePending() {
  const [s, set] = useState(state);
  useEffect(() => {
    readers.add(set);
    if (readers.size === 1) poll();
    else set(state);
    return () => {
      readers.delete(set);
      if (readers.size) return;
      // Signed out: stop, and forget this tenant's approvals.
      clearTimeout(timer);
      timer = 0;
      if (ctl) ctl.abort();
      ctl = null;
      state = { list: null, error: null };
      seen = '';
    };
  }, []);
  return s;
}
