// Unit tests of how the console reads approvals (node --test). The browser
// test (e2e/consolenode/approvals.mjs) decides real ones in the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  RECENT, asked, badgeText, countdown, decidedBy, decisionBody, outcomeText, pendingFirst, prettyInput, recentDecided,
  rememberOffer, rememberWords, ruleText,
} from '../src/approvals.js';

const egress = (over = {}) => ({
  id: 'apr_1', sandbox_id: 'sbx_1', kind: 'egress', state: 'pending',
  egress: { host: 'denied.test', port: 80, protocol: 'http' },
  requested_at: '2026-12-06T12:00:00Z', deadline: '2026-12-06T12:01:00Z', ...over,
});

test('the pending come first by deadline; decided ones are left out', () => {
  const list = [
    egress({ id: 'late', deadline: '2026-12-06T12:05:00Z' }),
    egress({ id: 'done', state: 'allowed', deadline: '2026-12-06T12:00:10Z' }),
    egress({ id: 'soon', requested_at: '2026-12-06T12:00:30Z', deadline: '2026-12-06T12:00:40Z' }),
    egress({ id: 'first' }),
    egress({ id: 'second', requested_at: '2026-12-06T12:00:01Z' }),
  ];
  assert.deepEqual(pendingFirst(list).map((a) => a.id), ['soon', 'first', 'second', 'late']);
});

test('the decided are the latest decision first, at most RECENT', () => {
  const list = [
    egress({ id: 'p' }),
    egress({ id: 'old', state: 'denied', decided_at: '2026-12-06T12:00:05Z' }),
    egress({ id: 'new', state: 'allowed', decided_at: '2026-12-06T12:00:50Z' }),
    egress({ id: 'timeout', state: 'timed_out', decided_at: '2026-12-06T12:00:20Z' }),
  ];
  assert.deepEqual(recentDecided(list).map((a) => a.id), ['new', 'timeout', 'old']);
  const many = Array.from({ length: RECENT + 7 }, (_, i) => egress({ id: 'a' + i, state: 'denied', decided_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }));
  const got = recentDecided(many);
  assert.equal(got.length, RECENT);
  assert.equal(got[0].id, 'a' + (RECENT + 6));
});

test('what each kind asks, in a line', () => {
  assert.equal(asked(egress()), 'http denied.test:80');
  assert.equal(asked(egress({ egress: { host: '2001:db8::1', port: 443, protocol: 'connect' } })), 'connect [2001:db8::1]:443');
  assert.equal(asked({ kind: 'command', command: { text: 'deploy to prod' } }), 'deploy to prod');
  assert.equal(asked({ kind: 'command', command: { text: 'line one\nline two' } }), 'line one…');
  assert.equal(asked({ kind: 'command', command: { text: 'x'.repeat(100) } }), 'x'.repeat(80) + '…');
  assert.equal(asked({ kind: 'harness', harness: { harness: 'claude', tool: 'Bash', category: 'shell' } }), 'claude: Bash');
});

test("the rule that asked, or the policy's ask: true", () => {
  assert.equal(ruleText({ rule: '*.test' }), '*.test');
  assert.match(ruleText({}), /^ask: true/);
});

test('a tool input is shown whole, indented', () => {
  const input = { command: 'rm -rf build\nmake', nested: { a: [1, 2] } };
  const out = prettyInput(input);
  assert.deepEqual(JSON.parse(out), input);
  assert.ok(out.includes('\n  "nested": {\n    "a": ['), out);
  assert.equal(prettyInput(undefined), '');
  assert.equal(prettyInput('just text'), '"just text"');
});

test('the countdown to the deadline, red in the last 10 s, then refused', () => {
  const deadline = '2026-12-06T12:01:00Z';
  const at = (s) => Date.parse(deadline) - s * 1000;
  assert.deepEqual(countdown(deadline, at(65)), { over: false, soon: false, text: '1m 5s left' });
  assert.deepEqual(countdown(deadline, at(10.5)), { over: false, soon: true, text: '10s left' });
  assert.equal(countdown(deadline, at(0.4)).over, true); // under a second is no time to decide
  assert.equal(countdown(deadline, at(-3)).text, 'deadline passed: refused');
  assert.equal(countdown('not a time', at(5)).over, true);
});

test('allow and remember: the sandbox, or the task for a task\'s sandbox; nothing for kinds the server does not remember', () => {
  assert.equal(rememberOffer(egress()).remember, 'sandbox');
  assert.equal(rememberOffer(egress()).scope, 'for this sandbox');
  const task = rememberOffer(egress({ task: 'tsk_1' }));
  assert.equal(task.remember, 'task');
  assert.equal(task.scope, 'for this task');
  assert.match(task.hint, /denied\.test:80/);
  // A task's command or tool call: for the rest of the task; outside a
  // task nothing would keep it.
  assert.equal(rememberOffer({ kind: 'command', command: { text: 'x' } }), null);
  assert.equal(rememberOffer({ kind: 'harness', harness: { harness: 'claude', tool: 'Bash' } }), null);
  assert.equal(rememberOffer({ kind: 'command', task: 't', command: { text: 'x' } }).remember, 'task');
  const tool = rememberOffer({ kind: 'harness', task: 't', harness: { harness: 'claude', tool: 'Bash' } });
  assert.equal(tool.scope, 'for this task');
  assert.match(tool.hint, /Bash calls/);
});

test('the decision bodies of the three buttons', () => {
  assert.deepEqual(decisionBody('allow', egress()), { decision: 'allow', remember: 'once' });
  assert.deepEqual(decisionBody('remember', egress({ task: 't' }), '  ok  '), { decision: 'allow', remember: 'task', reason: 'ok' });
  assert.deepEqual(decisionBody('remember', egress()), { decision: 'allow', remember: 'sandbox' });
  assert.deepEqual(decisionBody('deny', egress(), 'not now'), { decision: 'deny', remember: 'once', reason: 'not now' });
  assert.throws(() => decisionBody('remember', { kind: 'command', command: { text: 'x' } }));
});

test('who decided, what was remembered, what the page says after', () => {
  assert.equal(decidedBy({ state: 'allowed', decided_by: 'key_a' }, 'key_a'), 'key_a (you)');
  assert.equal(decidedBy({ state: 'denied', decided_by: 'key_b' }, 'key_a'), 'key_b');
  assert.equal(decidedBy({ state: 'timed_out' }, 'key_a'), 'nobody');
  assert.equal(rememberWords({ remember: 'task' }), 'for the task');
  assert.equal(rememberWords({}), '—');
  assert.equal(outcomeText(egress({ state: 'allowed', remember: 'once' })), 'Allowed http denied.test:80, this once.');
  assert.match(outcomeText(egress({ state: 'allowed', remember: 'sandbox' })), /remembered it for the sandbox/);
  assert.equal(outcomeText(egress({ state: 'denied' })), 'Denied http denied.test:80.');
});

test('the badge counts up to 99', () => {
  assert.equal(badgeText(1), '1');
  assert.equal(badgeText(99), '99');
  assert.equal(badgeText(100), '99+');
});
