// Unit tests of how the console reads a sandbox's lifecycle (node --test):
// what each state allows, pause times, origins, the fork and snapshot
// forms' fields. The browser test (e2e/consolenode/lifecycle.mjs) drives
// the same through the real page and server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  actions, countLabel, explain, isLive, lifeLeft, origins, parseForkCount, pauseDeadline, pausedFor, pausedMessage,
  snapshotNameError,
} from '../src/lifecycle.js';

test('a paused sandbox resumes, snapshots, forks and is destroyed, but does not pause again or extend', () => {
  assert.deepEqual(actions('paused'), { pause: false, resume: true, snapshot: true, fork: true, extend: false, destroy: true });
  assert.deepEqual(actions('running'), { pause: true, resume: false, snapshot: true, fork: true, extend: true, destroy: true });
  for (const st of ['creating', 'failed', 'unreachable']) {
    const a = actions(st);
    assert.ok(!a.pause && !a.resume && !a.snapshot && !a.fork && !a.extend, st);
  }
  assert.equal(actions('stopped').destroy, false);
});

test('paused is live, stopped and failed are not', () => {
  for (const st of ['creating', 'running', 'paused', 'unreachable']) assert.ok(isLive(st), st);
  for (const st of ['stopped', 'failed', '', undefined]) assert.ok(!isLive(st), String(st));
});

test('pause times: how long paused, the clock stopped, the deadline', () => {
  const now = Date.parse('2026-12-05T12:00:00Z');
  const sb = { state: 'paused', paused_at: '2026-12-05T11:56:40Z', expires_at: '2026-12-12T11:56:40Z' };
  assert.equal(pausedFor(sb, now), '3m 20s');
  assert.equal(lifeLeft(sb, now), 'clock stopped');
  assert.equal(pauseDeadline(sb, now), 'destroyed in 6d 23h unless resumed');
  assert.equal(pauseDeadline({ ...sb, expires_at: '2026-12-05T11:00:00Z' }, now), 'destroyed as expired any moment now');

  const running = { state: 'running', expires_at: '2026-12-05T12:15:00Z' };
  assert.equal(pausedFor(running, now), '');
  assert.equal(pauseDeadline(running, now), '');
  assert.equal(lifeLeft(running, now), '15m 0s');
  assert.equal(lifeLeft({ state: 'stopped', expires_at: running.expires_at }, now), '—');
});

test('a 409 paused reads as words; other errors pass through', () => {
  assert.equal(pausedMessage('terminal'), 'This sandbox is paused — resume to use the terminal.');
  assert.equal(explain({ status: 409, code: 'paused', message: 'sandbox sb_1 is paused: resume it first' }, 'files'),
    'This sandbox is paused — resume to use the files.');
  const other = { status: 409, code: 'conflict', message: 'sandbox sb_1 is stopped' };
  assert.equal(explain(other, 'files'), other);
  assert.equal(explain(null, 'files'), null);
});

test('origins link to the snapshot and to the parent sandbox', () => {
  assert.deepEqual(origins({ id: 'a' }), []);
  assert.deepEqual(origins({ snapshot: 'base line', fork_of: 'sb_9' }), [
    { label: 'From snapshot', name: 'base line', href: '/snapshots?name=base%20line' },
    { label: 'Fork of', name: 'sb_9', href: '/sandboxes/sb_9' },
  ]);
});

test('the fork count is a whole number from 1 to 50', () => {
  for (const [text, want] of [['1', 1], [' 2 ', 2], ['50', 50], ['007', 7]]) assert.equal(parseForkCount(text), want, text);
  for (const [text, want] of [['0', /make 1 to 50/], ['51', /make 1 to 50/], ['', /not a whole number/], ['2.5', /not a whole number/],
    ['-1', /not a whole number/], ['two', /not a whole number/], ['1e1', /not a whole number/]]) {
    assert.throws(() => parseForkCount(text), want, text);
  }
});

test('snapshot names as the server takes them; empty lets it pick', () => {
  for (const ok of ['', '  ', 'a', 'before-upgrade', 'v1.2_rc', '9lives', 'x'.repeat(63)]) assert.equal(snapshotNameError(ok), null, ok);
  for (const [bad, want] of [['-a', /start with a letter or a digit/], ['.hidden', /start with/], ['a b', /" " cannot be/],
    ['a/b', /"\/" cannot be/], ['é', /start with/], ['x'.repeat(64), /64 characters long: at most 63/]]) {
    assert.match(snapshotNameError(bad), want, bad);
  }
});

test('the list counts paused ones apart where they share the running view', () => {
  const l = [{ state: 'running' }, { state: 'paused' }, { state: 'creating' }];
  assert.equal(countLabel(l, 'running', 'Running'), '3 sandboxes: 2 running, 1 paused');
  assert.equal(countLabel(l.slice(0, 1), 'running', 'Running'), '1 running sandbox');
  assert.equal(countLabel([{ state: 'paused' }], 'paused', 'Paused'), '1 paused sandbox');
  assert.equal(countLabel([], 'stopped', 'Stopped'), '0 stopped sandboxes');
  assert.equal(countLabel(l, 'all', 'All'), '3 sandboxes');
});
