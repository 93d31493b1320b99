// How the console reads approvals: questions a sandbox puts to a person
// (a connection its policy asks about, a command an agent wants to run, a
// harness's tool call). Which come first, what each asks in a line, how
// long is left, what "remember" would do, and the decision's body.
import { duration } from './format.js';

// RECENT is how many decided approvals the inbox lists below the
// pending ones: the API answers all of a tenant's, oldest first.
export const RECENT = 50;

// pendingFirst is the pending approvals, the one whose deadline comes
// first on top: it is the one a person must answer soonest.
export function pendingFirst(list) {
  return list
    .filter((a) => a.state === 'pending')
    .sort((a, b) => Date.parse(a.deadline) - Date.parse(b.deadline) || Date.parse(a.requested_at) - Date.parse(b.requested_at));
}

// recentDecided is the last n decided (or timed out) approvals, the
// latest decision first.
export function recentDecided(list, n = RECENT) {
  const at = (a) => Date.parse(a.decided_at || a.requested_at) || 0;
  return list
    .filter((a) => a.state !== 'pending')
    .sort((a, b) => at(b) - at(a))
    .slice(0, n);
}

// hostPort writes an egress target; an IPv6 address gets brackets so its
// colons are not read as the port's.
export function hostPort(e) {
  const host = e.host.includes(':') && !e.host.startsWith('[') ? `[${e.host}]` : e.host;
  return `${host}:${e.port}`;
}

// asked is what an approval asks, in one line: the title of its card and
// its row among the decided.
export function asked(a) {
  switch (a.kind) {
    case 'egress':
      return a.egress ? `${a.egress.protocol} ${hostPort(a.egress)}` : 'a connection';
    case 'command': {
      const text = (a.command && a.command.text) || '';
      const line = text.split('\n')[0];
      return line.length > 80 || line !== text ? line.slice(0, 80) + '…' : line;
    }
    case 'harness':
      return a.harness ? `${a.harness.harness}: ${a.harness.tool}` : 'a tool call';
  }
  return a.kind;
}

// ruleText is the policy entry that made the proxy ask: none is the
// policy's "ask": true, which asks about every host it does not allow.
export function ruleText(e) {
  return e.rule ? e.rule : 'ask: true (every host not allowed)';
}

// prettyInput is a harness tool's input as indented JSON, whatever the
// harness sent, so a person reads all of it before allowing the call.
export function prettyInput(input) {
  if (input === undefined || input === null) return '';
  return JSON.stringify(input, null, 2);
}

// countdown is the time left to decide: after the deadline the sandbox
// gets no for an answer (the server times the approval out).
export function countdown(deadline, now = Date.now()) {
  const s = Math.floor((Date.parse(deadline) - now) / 1000);
  if (!(s > 0)) return { over: true, soon: true, text: 'deadline passed: refused' };
  return { over: false, soon: s <= 10, text: duration(s) + ' left' };
}

// rememberOffer says what "Allow and remember" would keep, or null where
// the server remembers nothing. An egress target goes on the sandbox's
// allow list (a task runs in one sandbox, so for a task's sandbox the
// words are the task's); a task's command or harness tool call is
// answered the same way, unasked, for the rest of the task.
export function rememberOffer(a) {
  if (a.kind === 'egress' && a.egress) {
    const task = !!a.task;
    return {
      remember: task ? 'task' : 'sandbox',
      scope: task ? 'for this task' : 'for this sandbox',
      hint: task
        ? `Allow and remember puts ${hostPort(a.egress)} on the allow list of the task's sandbox: later connections to it, for the rest of the task, go through unasked.`
        : `Allow and remember puts ${hostPort(a.egress)} on the sandbox's allow list: later connections to it go through unasked.`,
    };
  }
  if (!a.task) return null;
  if (a.kind === 'harness' && a.harness) {
    return {
      remember: 'task', scope: 'for this task',
      hint: `Allow and remember lets the task's later ${a.harness.tool} calls run unasked, for the rest of the task.`,
    };
  }
  if (a.kind === 'command' && a.command) {
    return {
      remember: 'task', scope: 'for this task',
      hint: 'Allow and remember answers the same request the same way, unasked, for the rest of the task.',
    };
  }
  return null;
}

// decisionBody is the POST /v1/approvals/{id}/decision body for a button:
// allow (this once), remember (allow, and remember as rememberOffer
// says) or deny.
export function decisionBody(verb, a, reason = '') {
  const body = { decision: verb === 'deny' ? 'deny' : 'allow', remember: 'once' };
  if (verb === 'remember') {
    const offer = rememberOffer(a);
    if (!offer) throw new Error(`a ${a.kind} approval cannot be remembered`);
    body.remember = offer.remember;
  }
  const r = reason.trim();
  if (r) body.reason = r;
  return body;
}

// STATE_WORDS are the states as the inbox says them.
export const STATE_WORDS = { pending: 'pending', allowed: 'allowed', denied: 'denied', timed_out: 'timed out' };

// rememberWords says what a decision kept beyond its one request.
export function rememberWords(a) {
  switch (a.remember) {
    case 'sandbox':
      return 'for the sandbox';
    case 'task':
      return 'for the task';
    case 'once':
      return 'once';
  }
  return '—';
}

// decidedBy is who decided: the API key's id (the signed-in one is
// "you"); nobody for a timeout.
export function decidedBy(a, myKey) {
  if (!a.decided_by) return a.state === 'timed_out' ? 'nobody' : '—';
  return a.decided_by === myKey ? `${a.decided_by} (you)` : a.decided_by;
}

// outcomeText is what the page says once a decision is stored.
export function outcomeText(a) {
  const what = asked(a);
  if (a.state === 'denied') return `Denied ${what}.`;
  if (a.remember === 'sandbox' || a.remember === 'task') {
    return `Allowed ${what} and remembered it for the ${a.remember}: later requests go through unasked.`;
  }
  return `Allowed ${what}, this once.`;
}

// badgeText is the header's count of pending approvals.
export function badgeText(n) {
  return n > 99 ? '99+' : String(n);
}
