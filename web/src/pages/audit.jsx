// The audit timeline: every event of the sandbox's hash-chained log, a
// type filter, each event's JSON on demand, and a check of the chain.
import { useState } from 'preact/hooks';
import { api, ndjson, sandboxPath } from '../api.js';
import { Empty, ErrorText, Icon, Loading, Notice, usePoll } from '../ui/kit.jsx';
import { clock, dateTime } from '../format.js';

const TYPES = [
  'sandbox.created', 'sandbox.expired', 'sandbox.destroyed', 'sandbox.failed', 'api.request',
  'exec.started', 'exec.output', 'exec.exited', 'session.created', 'session.input', 'session.output',
  'session.resized', 'session.ended', 'file.written', 'file.read', 'net.connection',
  'secret.injected', 'secret.misdirected', 'audit.output_capped',
];

const PAGE = 1000;

export function Audit({ sb }) {
  const [type, setType] = useState('');
  const [events, setEvents] = useState(null);
  const [more, setMore] = useState(false);
  const [err, setErr] = useState(null);
  const [open, setOpen] = useState(() => new Set());
  const [verify, setVerify] = useState(null);
  const [verifying, setVerifying] = useState(false);

  // upTo is the newest event a chain check covered: after a check the
  // timeline shows those events only, so its count is the check's. Events
  // recorded since (the check's own request among them) wait for "Show
  // newer events".
  const [upTo, setUpTo] = useState(0);

  const load = async (after, signal) => {
    const text = await api(sandboxPath(sb.id, '/audit'), { query: { type, after, limit: PAGE }, text: true, signal });
    const got = ndjson(text);
    const kept = upTo ? got.filter((e) => e.seq <= upTo) : got;
    return { got: kept, more: got.length === PAGE && kept.length === got.length };
  };

  usePoll(
    async (signal) => {
      try {
        const { got, more } = await load(undefined, signal);
        setEvents(got);
        setMore(more);
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    0,
    [sb.id, type, upTo],
  );

  const loadMore = async () => {
    try {
      const { got, more } = await load(events[events.length - 1].seq);
      setEvents(events.concat(got));
      setMore(more);
    } catch (e) {
      setErr(e);
    }
  };

  const check = async () => {
    setVerifying(true);
    setVerify(null);
    try {
      const v = await api(sandboxPath(sb.id, '/audit/verify'));
      setVerify(v);
      // An intact chain is events 1..v.events: show exactly those.
      setUpTo(v.ok ? v.events : 0);
    } catch (e) {
      setVerify({ error: e.message });
    }
    setVerifying(false);
  };

  const newer = () => {
    setVerify(null);
    setUpTo(0);
  };

  const toggle = (seq) => {
    const n = new Set(open);
    n.has(seq) ? n.delete(seq) : n.add(seq);
    setOpen(n);
  };

  return (
    <div class="stack-lg">
      <div class="toolbar">
        <div class="field inline">
          <label for="audit-type">Type</label>
          <select id="audit-type" class="input" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">All types</option>
            {TYPES.map((t) => (
              <option value={t} key={t}>{t}</option>
            ))}
          </select>
        </div>
        <span class="muted small grow" id="audit-count">
          {events ? `${events.length}${more ? '+' : ''} ${type ? type + ' ' : ''}event${events.length === 1 && !more ? '' : 's'} · oldest first` : ''}
        </span>
        <a class="button" href={sandboxPath(sb.id, '/audit/export')} download>
          Export
        </a>
        <button type="button" class="button primary" onClick={check} disabled={verifying}>
          <Icon name="shield" />
          {verifying ? 'Verifying…' : 'Verify chain'}
        </button>
      </div>
      {verify && verify.ok && (
        <Notice>
          Chain verified: {verify.events} event{verify.events === 1 ? '' : 's'}, each linked to the one before by its SHA-256 hash.
          The list shows those {verify.events};{' '}
          <button type="button" class="linkish" onClick={newer}>show newer events</button> adds the ones recorded since.
        </Notice>
      )}
      {verify && verify.ok === false && (
        <ErrorText error={`Chain broken at event ${verify.first_bad_seq}${verify.reason ? ': ' + verify.reason : ''}`} />
      )}
      {verify && verify.error && <ErrorText error={'Could not verify the chain: ' + verify.error} />}
      <ErrorText error={err} />
      {events === null ? (
        !err && <Loading />
      ) : events.length === 0 ? (
        <Empty title={type ? `No ${type} events` : 'No audit events'} icon="shield" />
      ) : (
        <div class="table-wrap">
          <table class="table audit">
            <thead>
              <tr>
                <th scope="col" class="num">#</th>
                <th scope="col">Time</th>
                <th scope="col">Type</th>
                <th scope="col">Actor</th>
                <th scope="col">Summary</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <Event key={e.seq} e={e} open={open.has(e.seq)} onToggle={() => toggle(e.seq)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {more && (
        <button type="button" class="button" onClick={loadMore}>
          Load more events
        </button>
      )}
    </div>
  );
}

function Event({ e, open, onToggle }) {
  const id = 'ev-' + e.seq;
  return (
    <>
      <tr class={'clickable' + (open ? ' selected' : '')} onClick={onToggle}>
        <td class="num mono muted">{e.seq}</td>
        <td class="mono small" title={dateTime(e.time)}>{clock(e.time)}</td>
        <td>
          <button type="button" class="linkish event-type" aria-expanded={open} aria-controls={id} onClick={(x) => { x.stopPropagation(); onToggle(); }}>
            <span class={'dot ' + category(e.type)} aria-hidden="true" />
            <span class="mono">{e.type}</span>
          </button>
        </td>
        <td class="mono small muted">{e.actor}</td>
        <td class="clip summary">{summary(e)}</td>
      </tr>
      {open && (
        <tr class="expanded" id={id}>
          <td colSpan={5}>
            <pre class="json" tabIndex={0} aria-label={`Event ${e.seq} as JSON`}>{JSON.stringify(e, null, 2)}</pre>
          </td>
        </tr>
      )}
    </>
  );
}

function category(t) {
  if (t.startsWith('sandbox.')) return 'c-sandbox';
  if (t.startsWith('exec.')) return 'c-exec';
  if (t.startsWith('session.')) return 'c-session';
  if (t.startsWith('net.') || t.startsWith('secret.')) return 'c-net';
  if (t.startsWith('file.')) return 'c-file';
  return 'c-other';
}

function text(d, n = 120) {
  if (!d.data) return '';
  // Terminal output: drop escape sequences and control characters, which a
  // one-line summary cannot show.
  const s = d.encoding === 'base64'
    ? `(${d.bytes} bytes, binary)`
    : d.data.replace(/\x1b(\[[0-9;?]*[ -\/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)/g, '').replace(/[\x00-\x1f\x7f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n) + '…' : s;
}

function summary(e) {
  const d = e.data || {};
  switch (e.type) {
    case 'api.request': // route is the pattern, which may start with the method
      return `${String(d.route || '').startsWith(d.method + ' ') ? d.route : d.method + ' ' + d.route} → ${d.status}`;
    case 'exec.started':
      return (d.command || (d.argv || []).join(' ')) + (d.cwd ? `  (in ${d.cwd})` : '');
    case 'exec.output':
      return `${d.stream}: ${text(d)}`;
    case 'exec.exited':
      return d.signal ? `killed by signal ${d.signal}` : `exit ${d.exit_code}${d.timed_out ? ', timed out' : ''}${d.oom_killed ? ', out of memory' : ''}`;
    case 'session.created':
      return `${d.session_id} · ${d.mode} ${d.shell} ${d.cols}×${d.rows}`;
    case 'session.input':
    case 'session.output':
      return text(d);
    case 'session.resized':
      return `${d.cols}×${d.rows}`;
    case 'session.ended':
      return d.error || (d.signal ? `signal ${d.signal}` : `exit ${d.exit_code}`);
    case 'file.written':
    case 'file.read':
      return `${d.path} (${d.size} bytes)`;
    case 'net.connection':
      if (d.upstream_error) return `failed (${d.upstream_error}) ${d.host}:${d.port}${d.reason ? ': ' + d.reason : ''}`;
      return `${d.decision} ${d.host}:${d.port}${d.rule ? ' by ' + d.rule : ''}`;
    case 'secret.injected':
    case 'secret.misdirected':
      return `${d.name} → ${d.host}:${d.port}`;
    case 'sandbox.created':
      return `template ${d.template}`;
    default:
      return d.reason || '';
  }
}
