// Unit tests of how the console reads an image import (node --test): the
// event stream cut into whole events however it arrives, each layer's
// progress, the ending, and the names checked before a tarball is sent.
// The browser test (e2e/consolenode/volumes.mjs) uploads a real one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  imageRefError, importEnd, importStart, importStep, layerFraction, layerText, readEvents, shortDigest, sseTake, templateNameError,
} from '../src/images.js';

// stream is what the server sends for a two-layer import (its sseStream:
// "event: NAME\ndata: JSON\n\n", with a keep-alive comment between).
const stream = [
  'event: progress\ndata: {"layer":1,"layers":2,"digest":"sha256:aaaa","bytes":65536,"total":131072,"done":false}\n\n',
  ': keep-alive\n\n',
  'event: progress\ndata: {"layer":1,"layers":2,"digest":"sha256:aaaa","bytes":131072,"total":131072,"done":true}\n\n',
  'event: progress\ndata: {"layer":2,"layers":2,"digest":"sha256:bbbb","bytes":512,"total":512,"done":true}\n\n',
  'event: template\ndata: {"name":"img","from":"image","image":"file:img.tar","digest":"sha256:cccc","size_bytes":2048}\n\n',
].join('');

// chunks cuts s at the given offsets, as a network might.
function chunks(s, cuts) {
  const out = [];
  let at = 0;
  for (const c of [...cuts, s.length]) {
    out.push(s.slice(at, c));
    at = c;
  }
  return out;
}

function fold(events) {
  return importEnd(events.reduce(importStep, importStart));
}

test('sseTake gives the whole events and keeps the cut one for the next read', () => {
  const { events, rest } = sseTake('event: progress\ndata: {"layer":1}\n\nevent: templ');
  assert.deepEqual(events, [{ event: 'progress', data: { layer: 1 } }]);
  assert.equal(rest, 'event: templ');
  assert.deepEqual(sseTake('data: {"a":1}\n'), { events: [], rest: 'data: {"a":1}\n' });
  // CRLF line ends, and a comment alone, are events' ends too.
  assert.deepEqual(sseTake('event: error\r\ndata: {"code":"invalid"}\r\n\r\n: ping\n\n'), {
    events: [{ event: 'error', data: { code: 'invalid' } }], rest: '',
  });
});

test('the same events however the stream is cut', () => {
  const whole = sseTake(stream).events;
  assert.equal(whole.length, 4);
  const r = new Random(7);
  for (let n = 0; n < 200; n++) {
    const cuts = [...new Set(Array.from({ length: r.int(12) }, () => r.int(stream.length)))].sort((a, b) => a - b);
    let buf = '';
    const got = [];
    for (const c of chunks(stream, cuts)) {
      const { events, rest } = sseTake(buf + c);
      got.push(...events);
      buf = rest;
    }
    assert.equal(buf, '', `cut at ${cuts}`);
    assert.deepEqual(got, whole, `cut at ${cuts}`);
  }
});

test('readEvents reads a body stream to its end, a last event without its blank line included', async () => {
  const body = new ReadableStream({
    start(c) {
      // Bytes, cut inside a multi-byte character too.
      const b = new TextEncoder().encode(stream + 'event: x\ndata: "é"');
      for (const part of chunks(b, [3, 40, 41, 200, b.length - 2])) c.enqueue(part);
      c.close();
    },
  });
  const got = [];
  await readEvents(body, (ev) => got.push(ev));
  assert.deepEqual(got.map((e) => e.event), ['progress', 'progress', 'progress', 'template', 'x']);
  assert.equal(got[4].data, 'é');
});

test('an import: each layer as last reported, then the template', () => {
  const st = fold(sseTake(stream).events);
  assert.equal(st.error, null);
  assert.equal(st.template.name, 'img');
  assert.deepEqual(st.layers.map((l) => [l.layer, l.of, l.bytes, l.done]), [[1, 2, 131072, true], [2, 2, 512, true]]);
  assert.deepEqual(st.layers.map(layerText), [
    { name: 'Layer 1/2', read: '128 KiB of 128 KiB, done' },
    { name: 'Layer 2/2', read: '512 B of 512 B, done' },
  ]);
});

test('a layer part read: its fraction; of an unknown size: none until done', () => {
  const half = importStep(importStart, { event: 'progress', data: { layer: 1, layers: 3, bytes: 65536, total: 131072 } }).layers[0];
  assert.equal(layerFraction(half), 0.5);
  assert.deepEqual(layerText(half), { name: 'Layer 1/3', read: '64 KiB of 128 KiB' });
  const unknown = { layer: 2, of: 3, bytes: 3 << 20, total: -1, done: false };
  assert.equal(layerFraction(unknown), null);
  assert.deepEqual(layerText(unknown), { name: 'Layer 2/3', read: '3.0 MiB' });
  assert.equal(layerFraction({ ...unknown, done: true }), 1);
  assert.equal(layerFraction({ layer: 1, of: 1, bytes: 10, total: 5 }), 1); // never past the end
});

test('an error event ends it with the server\'s message; a cut stream says so', () => {
  const st = fold([
    { event: 'progress', data: { layer: 1, layers: 1, bytes: 10, total: 100 } },
    { event: 'error', data: { code: 'invalid', message: 'pull 127.0.0.1:1/x/y:z: 127.0.0.1 is a loopback address' } },
  ]);
  assert.equal(st.template, null);
  assert.match(st.error, /loopback/);
  assert.equal(st.layers.length, 1);
  assert.match(fold([{ event: 'progress', data: { layer: 1, layers: 1, bytes: 1, total: 2 } }]).error, /ended the import without a result/);
  // Events it does not know, and a progress without a layer, change nothing.
  assert.equal(importStep(importStart, { event: 'message', data: 'hi' }), importStart);
  assert.equal(importStep(importStart, { event: 'progress', data: {} }), importStart);
});

test('template names as the server takes them, checked before a tarball is sent', () => {
  for (const ok of ['img', 'python-3-12', 'a', '0x', 'x'.repeat(63)]) assert.equal(templateNameError(ok), null, ok);
  for (const [bad, says] of [
    ['', /Give the template a name/], ['  ', /Give the template a name/], ['base', /built-in/], ['-x', /cannot start with "-"/],
    ['Img', /"I" cannot be in a template name/], ['my_img', /"_" cannot/], ['a.b', /"\." cannot/], ['x'.repeat(64), /64 characters long: at most 63/],
  ]) {
    assert.match(templateNameError(bad), says, JSON.stringify(bad));
  }
  assert.match(templateNameError('img', ['base', 'img']), /There is a template named img already/);
  assert.equal(templateNameError(' img2 ', ['base', 'img']), null);
});

test('image references: the obvious mistakes, the rest to the server', () => {
  for (const ok of ['alpine', 'alpine:3.20', 'ghcr.io/team/app:1.2', 'localhost:5000/x@sha256:abcd']) assert.equal(imageRefError(ok), null, ok);
  assert.match(imageRefError(''), /Give an image reference/);
  assert.match(imageRefError('ghcr.io/a b'), /no spaces/);
  assert.match(imageRefError('https://ghcr.io/team/app'), /Leave out "https:\/\/"/);
});

test('digests are cut to 12 hex digits', () => {
  assert.equal(shortDigest('sha256:0123456789abcdef0123'), 'sha256:0123456789ab');
  assert.equal(shortDigest(''), '');
  assert.equal(shortDigest('0123456789abcdef'), '0123456789ab');
});

// Random is a small seeded generator, so a failure names cuts that repeat.
class Random {
  constructor(seed) {
    this.s = seed >>> 0;
  }

  int(n) {
    this.s = (Math.imul(this.s, 1664525) + 1013904223) >>> 0;
    return this.s % Math.max(1, n);
  }
}
