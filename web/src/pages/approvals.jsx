// The approvals inbox: what sandboxes are waiting on a person for, live
// (pending.js polls every second), each with everything asked and a
// countdown to the deadline at which the answer becomes no; below, the
// latest decisions and who made them.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link } from '../router.jsx';
import { Empty, ErrorText, Icon, Loading, Notice, Pill, useNow, usePoll } from '../ui/kit.jsx';
import { age, clock, dateTime } from '../format.js';
import {
  RECENT, STATE_WORDS, asked, countdown, decidedBy, decisionBody, hostPort, outcomeText, pendingFirst, prettyInput,
  recentDecided, rememberOffer, rememberWords, ruleText,
} from '../approvals.js';
import { refreshPending, usePending } from '../pending.js';

// HISTORY_POLL catches decisions that came and went between two polls of
// the pending ones; any approval leaving the pending list refetches at once.
const HISTORY_POLL = 10000;
const SAID_MS = 20000;

export function Approvals({ session }) {
  const pending = usePending();
  const now = useNow(1000);
  const [history, setHistory] = useState(null);
  const [histErr, setHistErr] = useState(null);
  // said is the last decision's outcome, {ok} or {error}, shown for
  // SAID_MS: it is news while the person who clicked looks for it.
  const [said, setSaid] = useState(null);
  const list = pending.list ? pendingFirst(pending.list) : null;
  const ids = list ? list.map((a) => a.id).join(',') : '';

  const refreshHistory = usePoll(
    async (signal) => {
      try {
        const r = await api('/v1/approvals', { signal });
        setHistory(recentDecided(r.approvals));
        setHistErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setHistErr(e);
      }
    },
    HISTORY_POLL,
    [ids],
  );

  const decided = (a) => {
    setSaid({ ok: outcomeText(a), at: Date.now() });
    refreshPending();
    refreshHistory();
  };
  // gone: someone else decided first (409), or the approval is no more
  // (404): say so at the top, and show where it stands now.
  const gone = (a, e) => {
    const why = e.status === 409 ? 'decided already' : 'gone';
    setSaid({ error: `${asked(a)}: ${why} (${e.message}). The lists show where it stands now.`, at: Date.now() });
    refreshPending();
    refreshHistory();
  };
  const unavailable = pending.error && pending.error.status === 503;

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Approvals</h1>
          <p class="muted">
            What your sandboxes are waiting on you for: a connection their network policy asks about, a command an agent wants to
            run, a harness's tool call. The sandbox holds the request until you decide; at the deadline the answer is no. Live:
            checked every second.
          </p>
        </div>
      </div>
      <ErrorText error={unavailable ? 'This server has no approvals service.' : pending.error} />
      {said && now - said.at < SAID_MS && (said.error ? <ErrorText error={said.error} /> : <Notice>{said.ok}</Notice>)}

      <section class="stack" aria-labelledby="pending-heading">
        <h2 id="pending-heading">
          Waiting for a decision{list && list.length ? ` (${list.length})` : ''}
        </h2>
        {list === null ? (
          !pending.error && <Loading />
        ) : list.length === 0 ? (
          <Empty title="Nothing is waiting for you" icon="bell">
            A sandbox whose network policy has <span class="mono">ask</span> holds a connection to a host it does not allow and
            asks here; so do agents and harnesses that ask before they act.
          </Empty>
        ) : (
          <ul class="approvals">
            {list.map((a) => (
              <li key={a.id}>
                <PendingCard a={a} now={now} onDecided={decided} onGone={gone} />
              </li>
            ))}
          </ul>
        )}
      </section>

      <section class="stack" aria-labelledby="decided-heading">
        <h2 id="decided-heading">Decided</h2>
        <ErrorText error={histErr} />
        {history === null ? (
          !histErr && <Loading />
        ) : history.length === 0 ? (
          <p class="muted">No approval has been decided yet.</p>
        ) : (
          <DecidedTable list={history} myKey={session.key_id} />
        )}
      </section>
    </div>
  );
}

function PendingCard({ a, now, onDecided, onGone }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState('');
  const [err, setErr] = useState(null);
  const left = countdown(a.deadline, now);
  const offer = rememberOffer(a);
  const titleId = 'apr-' + a.id;

  const decide = async (verb) => {
    setBusy(verb);
    setErr(null);
    try {
      const got = await api('/v1/approvals/' + encodeURIComponent(a.id) + '/decision', {
        method: 'POST',
        json: decisionBody(verb, a, reason),
      });
      onDecided(got);
    } catch (e) {
      if (e.status === 409 || e.status === 404) onGone(a, e);
      else setErr(e);
      setBusy('');
    }
  };

  return (
    <article class="panel approval" aria-labelledby={titleId}>
      <div class="approval-head">
        <span class="chip">{a.kind}</span>
        <h3 id={titleId} class="mono break">
          {asked(a)}
        </h3>
        <span role="timer" class={'countdown' + (left.soon ? ' soon' : '')} title={'Deadline ' + dateTime(a.deadline)}>
          {left.text}
        </span>
      </div>
      <dl class="details">
        <Asked a={a} />
        <dt>Sandbox</dt>
        <dd>
          <Link href={'/sandboxes/' + encodeURIComponent(a.sandbox_id)} class="mono">
            {a.sandbox_id}
          </Link>
          {a.kind === 'egress' && (
            <Link href={'/sandboxes/' + encodeURIComponent(a.sandbox_id) + '/network'} class="small">
              network log
            </Link>
          )}
        </dd>
        <dt>Task</dt>
        <dd>{a.task ? <TaskLink task={a.task} /> : <span class="muted">none</span>}</dd>
        <dt>Asked</dt>
        <dd>
          <span title={dateTime(a.requested_at)}>{clock(a.requested_at)}</span>
          <span class="muted">{age(a.requested_at, now)} ago</span>
        </dd>
        <dt>Deadline</dt>
        <dd>
          <span title={dateTime(a.deadline)}>{clock(a.deadline)}</span>
        </dd>
      </dl>
      <form class="decide" aria-label={'Decide ' + asked(a)} onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for={'reason-' + a.id}>Reason (optional)</label>
          <input
            id={'reason-' + a.id}
            class="input"
            maxLength={1000}
            value={reason}
            placeholder="Kept with the decision in the audit log"
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </div>
        <div class="decide-buttons">
          <button type="button" class="button primary" disabled={!!busy} onClick={() => decide('allow')}>
            <Icon name="check" />
            Allow
          </button>
          {offer && (
            <button type="button" class="button" disabled={!!busy} onClick={() => decide('remember')} aria-describedby={'remember-' + a.id}>
              Allow and remember <span class="muted">{offer.scope}</span>
            </button>
          )}
          <button type="button" class="button danger-outline" disabled={!!busy} onClick={() => decide('deny')}>
            Deny
          </button>
        </div>
        {offer && (
          <p class="hint" id={'remember-' + a.id}>
            {offer.hint}
          </p>
        )}
        <ErrorText error={err} />
      </form>
    </article>
  );
}

// Asked is what the approval asks, in full, as rows of its card.
function Asked({ a }) {
  if (a.kind === 'egress' && a.egress) {
    const e = a.egress;
    return (
      <>
        <dt>Connection</dt>
        <dd class="mono">{hostPort(e)}</dd>
        <dt>Protocol</dt>
        <dd>{e.protocol}</dd>
        <dt>Rule</dt>
        <dd class="mono">{ruleText(e)}</dd>
      </>
    );
  }
  if (a.kind === 'command' && a.command) {
    return (
      <>
        <dt>Command</dt>
        <dd>
          <pre class="asked">{a.command.text}</pre>
        </dd>
      </>
    );
  }
  if (a.kind === 'harness' && a.harness) {
    const h = a.harness;
    const input = prettyInput(h.input);
    return (
      <>
        <dt>Harness</dt>
        <dd class="mono">{h.harness}</dd>
        <dt>Tool</dt>
        <dd class="mono">{h.tool}</dd>
        <dt>Category</dt>
        <dd>{h.category || <span class="muted">none</span>}</dd>
        <dt>Input</dt>
        <dd>{input ? <pre class="asked">{input}</pre> : <span class="muted">none</span>}</dd>
      </>
    );
  }
  return null;
}

// TaskLink lists the task's sandbox (the console has no page of its own
// for a task; the sandbox carries the task's id as label airlock.task).
function TaskLink({ task }) {
  const q = new URLSearchParams({ state: 'all', label: 'airlock.task=' + task });
  return (
    <Link href={'/sandboxes?' + q} class="mono" title="The sandboxes of this task">
      {task}
    </Link>
  );
}

function DecidedTable({ list, myKey }) {
  return (
    <div class="table-wrap">
      <table class="table">
        <caption class="table-caption">{list.length === RECENT ? `The latest ${RECENT}, newest first` : 'Newest first'}</caption>
        <thead>
          <tr>
            <th scope="col">Asked</th>
            <th scope="col">State</th>
            <th scope="col">Sandbox</th>
            <th scope="col">Decided</th>
            <th scope="col">By</th>
            <th scope="col">Remember</th>
            <th scope="col">Reason</th>
          </tr>
        </thead>
        <tbody>
          {list.map((a) => (
            <tr key={a.id}>
              <td>
                <span class="chip">{a.kind}</span> <span class="mono">{asked(a)}</span>
              </td>
              <td>
                <Pill value={STATE_WORDS[a.state] || a.state} kind={a.state === 'timed_out' ? 'amber' : undefined} />
              </td>
              <td>
                <Link href={'/sandboxes/' + encodeURIComponent(a.sandbox_id)} class="mono">
                  {a.sandbox_id}
                </Link>
              </td>
              <td title={dateTime(a.decided_at)}>{a.decided_at ? clock(a.decided_at) : '—'}</td>
              <td class="mono">{decidedBy(a, myKey)}</td>
              <td>{rememberWords(a)}</td>
              <td class="clip" title={a.reason || undefined}>
                {a.reason || <span class="muted">—</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
