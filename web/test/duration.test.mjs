// Unit tests of the console's duration fields (node --test): they read
// what `airlock create --timeout` reads. internal/console's Go test also
// checks parseGoDuration against Go's own time.ParseDuration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGoDuration, parseSeconds, short } from '../src/duration.js';

test('parseSeconds reads Go durations as whole seconds, rounded up', () => {
  for (const [text, want] of [
    ['90s', 90], ['10m', 600], ['1h30m', 5400], ['15m', 900], ['24h', 86400], ['1.5h', 5400],
    ['500ms', 1], ['1m0.5s', 61], ['  2m ', 120], ['', undefined], ['   ', undefined],
  ]) {
    assert.equal(parseSeconds(text), want, text);
  }
});

test('parseSeconds refuses what the CLI refuses, saying why', () => {
  for (const [text, want] of [
    ['900', /has no unit: write 900s/],
    ['48h', /"48h" is longer than the 24h maximum/],
    ['24h0m1s', /longer than the 24h maximum/],
    ['5d', /unknown unit "d"/],
    ['1h 30m', /has no spaces/],
    ['ten minutes', /is not a duration/],
    ['-5m', /is negative/],
    ['0', /would end it at once/],
    ['0s', /would end it at once/],
    ['.s', /is not a duration/],
  ]) {
    assert.throws(() => parseSeconds(text), want, text);
  }
});

test('parseSeconds with allowZero takes 0 as none', () => {
  assert.equal(parseSeconds('0', { allowZero: true }), 0);
  assert.equal(parseSeconds('0s', { allowZero: true }), 0);
  assert.throws(() => parseSeconds('25h', { allowZero: true }), /24h maximum/);
});

test('parseGoDuration keeps Go’s edge cases', () => {
  assert.equal(parseGoDuration('9223372036854775807ns'), (1n << 63n) - 1n);
  assert.throws(() => parseGoDuration('9223372036854775808ns'));
  assert.equal(parseGoDuration('-9223372036854775808ns'), -(1n << 63n));
  assert.equal(parseGoDuration('1µs'), 1000n);
  assert.equal(parseGoDuration('1μs'), 1000n);
  assert.equal(parseGoDuration('+5s'), 5000000000n);
  assert.equal(parseGoDuration('-0'), 0n);
  assert.equal(parseGoDuration('5.s'), 5000000000n);
  assert.equal(parseGoDuration('.5s'), 500000000n);
});

test('short writes seconds as Go would', () => {
  assert.equal(short(86400), '24h');
  assert.equal(short(5400), '1h30m');
  assert.equal(short(90), '1m30s');
  assert.equal(short(0), '0s');
});
