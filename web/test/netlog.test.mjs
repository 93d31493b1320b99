// Unit tests of how the network log reads an event (node --test). The
// browser test (e2e/consolenode) renders such events in the real page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outcome } from '../src/netlog.js';

test('an allowed connection whose upstream failed is failed, not allowed', () => {
  const o = outcome({ decision: 'allowed', upstream_error: 'dns', reason: 'lookup nxdomain.example: no such host' });
  assert.deepEqual(o, { kind: 'failed', label: 'failed: dns', color: 'amber', reason: 'lookup nxdomain.example: no such host' });
});

test('every upstream error has words when the event has no reason', () => {
  for (const kind of ['dns', 'refused', 'unreachable', 'timeout', 'tls', 'reset', 'other', 'new-kind']) {
    const o = outcome({ decision: 'allowed', upstream_error: kind });
    assert.equal(o.kind, 'failed');
    assert.equal(o.label, 'failed: ' + kind);
    assert.ok(o.reason.length > 10, kind);
  }
});

test('allowed and denied stay what they were', () => {
  assert.deepEqual(outcome({ decision: 'allowed', rule: 'example.com' }), { kind: 'allowed', label: 'allowed', color: 'green', reason: '' });
  assert.deepEqual(outcome({ decision: 'denied', reason: 'not in the allow-list' }),
    { kind: 'denied', label: 'denied', color: 'red', reason: 'not in the allow-list' });
});
