// Unit tests of the console's volume rules (node --test): names, sizes
// and mount paths as the server reads them (sandbox/volumes.go), the
// create form's mounts and pause options as the request carries them,
// and which sandboxes mount a volume. The browser test
// (e2e/consolenode/volumes.mjs) drives them through the real pages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cleanPath, mountErrors, mountPathError, mountedBy, mountsBody, pauseBody, volumeNameError, volumeSizeError,
} from '../src/volumes.js';

test('volume names: a snapshot\'s rules, and not empty', () => {
  for (const ok of ['data', 'cache-1', 'a.b_c', '0', 'x'.repeat(63)]) assert.equal(volumeNameError(ok), null, ok);
  assert.match(volumeNameError(''), /Give the volume a name/);
  assert.match(volumeNameError('-x'), /start with a letter or a digit/);
  assert.match(volumeNameError('a/b'), /"\/" cannot be in a name/);
  assert.match(volumeNameError('x'.repeat(64)), /at most 63/);
});

test('volume sizes: whole MiB from 16 to 1 TiB', () => {
  for (const ok of ['16', '1024', String(1 << 20), ' 32 ']) assert.equal(volumeSizeError(ok), null, ok);
  assert.match(volumeSizeError(''), /Give a size in MiB/);
  assert.match(volumeSizeError('1.5'), /not a whole number/);
  assert.match(volumeSizeError('-5'), /not a whole number/);
  assert.match(volumeSizeError('15'), /15 MiB: a volume holds 16 MiB to 1 TiB/);
  assert.match(volumeSizeError(String((1 << 20) + 1)), /16 MiB to 1 TiB/);
});

test('cleanPath is path.Clean of an absolute path', () => {
  for (const [p, want] of [['/mnt/data', '/mnt/data'], ['/mnt//data/', '/mnt/data'], ['/mnt/./a/../b', '/mnt/b'], ['/..', '/'], ['/', '/']]) {
    assert.equal(cleanPath(p), want, p);
  }
});

test('mount paths the server refuses, and the ones it takes', () => {
  for (const ok of ['/mnt/data', '/data', '/home/user/data', '/home/other', '/var/lib/x', '/opt/cache', '/mnt/data/']) {
    assert.equal(mountPathError(ok), null, ok);
  }
  for (const [bad, says] of [
    ['', /Give the path/], ['mnt/data', /want an absolute path/], ['/', /cannot go on \/$/], ['/proc', /cannot go on \/proc$/],
    ['/proc/x', /cannot go on or under \/proc$/], ['/usr/local/x', /under \/usr$/], ['/home', /on \/home$/], ['/home/user', /on \/home\/user$/],
    ['/tmp/../etc/x', /under \/etc$/], ['/var/tmp/a', /under \/var\/tmp$/], ['/lib64', /on \/lib64$/],
  ]) {
    assert.match(mountPathError(bad), says, JSON.stringify(bad));
  }
});

test('the form\'s mounts: a path error per row, twice the same volume or path, too many', () => {
  const row = (name, path, read_only = false) => ({ key: name + path, name, path, read_only });
  assert.deepEqual(mountErrors([]), { paths: [], list: null, ok: true });
  assert.deepEqual(mountErrors([row('a', '/mnt/a'), row('b', '/mnt/b', true)]), { paths: [null, null], list: null, ok: true });
  let e = mountErrors([row('a', '/mnt/a'), row('b', '/mnt/a/')]);
  assert.deepEqual(e.paths, [null, 'Another volume is mounted at /mnt/a']);
  assert.equal(e.ok, false);
  e = mountErrors([row('a', '/mnt/a'), row('a', '/mnt/b')]);
  assert.match(e.list, /Volume a is mounted twice/);
  e = mountErrors([row('a', '/proc/a'), row('', '/mnt/b')]);
  assert.match(e.paths[0], /under \/proc/);
  assert.match(e.list, /Row 2 has no volume picked/);
  e = mountErrors(Array.from({ length: 9 }, (_, i) => row('v' + i, '/mnt/v' + i)));
  assert.match(e.list, /9 volumes: a sandbox mounts at most 8/);
});

test('the request carries the mounts cleaned, read_only only when set', () => {
  assert.equal(mountsBody([]), undefined);
  assert.deepEqual(mountsBody([{ key: 1, name: 'a', path: ' /mnt/a/ ', read_only: false }, { key: 2, name: 'b', path: '/srv/b', read_only: true }]), [
    { name: 'a', path: '/mnt/a' }, { name: 'b', path: '/srv/b', read_only: true },
  ]);
});

test('pause options: idle_action only with an idle timeout, max paused as a duration', () => {
  assert.deepEqual(pauseBody({ autoResume: false, idle: false, idleAction: 'destroy', maxPaused: '' }), {});
  assert.deepEqual(pauseBody({ autoResume: true, idle: true, idleAction: 'pause', maxPaused: '48h' }), {
    auto_resume: true, idle_action: 'pause', max_paused_s: 172800,
  });
  // "pause" needs an idle timeout: without one the choice is not sent.
  assert.deepEqual(pauseBody({ autoResume: false, idle: false, idleAction: 'pause', maxPaused: '' }), {});
  assert.deepEqual(pauseBody({ autoResume: false, idle: true, idleAction: 'destroy', maxPaused: '720h' }), { max_paused_s: 2592000 });
  assert.throws(() => pauseBody({ idle: false, maxPaused: '721h' }), /longer than the 720h maximum/);
  assert.throws(() => pauseBody({ idle: false, maxPaused: '7d' }), /unknown unit "d"/);
});

test('mountedBy: the sandboxes whose volumes name it', () => {
  const list = [
    { id: 'sb-1', volumes: [{ name: 'data', path: '/mnt/data' }] },
    { id: 'sb-2', volumes: null },
    { id: 'sb-3', volumes: [{ name: 'cache', path: '/c' }, { name: 'data', path: '/d', read_only: true }] },
  ];
  assert.deepEqual(mountedBy(list, 'data'), ['sb-1', 'sb-3']);
  assert.deepEqual(mountedBy(list, 'nope'), []);
});
