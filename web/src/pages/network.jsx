// The network log, with one click to allow a denied host: read the live
// policy, add the host, put it back.
import { Fragment } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { api, sandboxPath } from '../api.js';
import { Empty, ErrorText, Loading, Notice, Pill, usePoll } from '../ui/kit.jsx';
import { bytes, clock } from '../format.js';
import { outcome } from '../netlog.js';
import { explain } from '../lifecycle.js';

// entryFor is the allow entry for a host and port: a bare name covers 80
// and 443.
function entryFor(e) {
  const host = e.host.includes(':') && !e.host.startsWith('[') ? `[${e.host}]` : e.host;
  return e.port === 80 || e.port === 443 || !e.port ? host : `${host}:${e.port}`;
}

export function Network({ sb }) {
  const [events, setEvents] = useState(null);
  const [policy, setPolicy] = useState(null);
  const [err, setErr] = useState(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState('');
  const [decision, setDecision] = useState('');
  const [open, setOpen] = useState(() => new Set());
  const last = useRef(0);
  const all = useRef([]);

  usePoll(
    async (signal) => {
      try {
        const [log, pol] = await Promise.all([
          api(sandboxPath(sb.id, '/network/log'), { query: { after: last.current || undefined }, signal }),
          api(sandboxPath(sb.id, '/network'), { signal }).catch((e) => (e.name === 'AbortError' ? Promise.reject(e) : null)),
        ]);
        if (log.events.length) {
          all.current = all.current.concat(log.events);
          last.current = log.events[log.events.length - 1].seq;
        }
        setEvents(all.current.slice());
        if (pol) setPolicy(pol);
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    sb.state === 'running' ? 2000 : 0,
    [sb.id],
  );

  const allow = async (e) => {
    const entry = entryFor(e);
    setBusy(entry);
    setErr(null);
    setNotice('');
    try {
      const cur = await api(sandboxPath(sb.id, '/network'));
      const list = cur.allow || [];
      const next = {
        mode: 'allowlist',
        allow: list.includes(entry) ? list : list.concat(entry),
        deny: cur.deny || [],
      };
      const got = await api(sandboxPath(sb.id, '/network'), { method: 'PUT', json: next });
      setPolicy(got);
      setNotice(`${entry} is now allowed: the next connection to it goes through.`);
    } catch (x) {
      setErr(explain(x, 'network policy'));
    }
    setBusy('');
  };

  if (events === null) return err ? <ErrorText error={err} /> : <Loading />;
  const allowed = new Set((policy && policy.allow) || []);
  const shown = events.filter((e) => !decision || outcome(e).kind === decision).slice().reverse();
  const toggle = (seq) => {
    const n = new Set(open);
    n.has(seq) ? n.delete(seq) : n.add(seq);
    setOpen(n);
  };

  return (
    <div class="stack-lg">
      {policy && (
        <div class="panel policy">
          <div>
            <span class="muted small">Policy</span>
            <div class="strong">{policy.mode === 'none' ? 'No network' : 'Allow-list through the egress proxy'}</div>
          </div>
          <div class="grow">
            <span class="muted small">Allowed</span>
            <div class="chips">
              {policy.allow.length ? policy.allow.map((h) => <span class="chip mono" key={h}>{h}</span>) : <span class="muted">nothing</span>}
            </div>
          </div>
          {policy.deny.length > 0 && (
            <div>
              <span class="muted small">Denied</span>
              <div class="chips">
                {policy.deny.map((h) => <span class="chip mono red" key={h}>{h}</span>)}
              </div>
            </div>
          )}
        </div>
      )}
      <Notice>{notice}</Notice>
      <ErrorText error={err} />
      <div class="toolbar">
        <div class="field inline">
          <label for="decision">Decision</label>
          <select id="decision" class="input" value={decision} onChange={(e) => setDecision(e.currentTarget.value)}>
            <option value="">All</option>
            <option value="allowed">allowed</option>
            <option value="denied">denied</option>
            <option value="failed">failed upstream</option>
          </select>
        </div>
        <span class="muted small">{events.length} connection{events.length === 1 ? '' : 's'} · newest first</span>
      </div>
      {shown.length === 0 ? (
        <Empty title="No connections yet" icon="shield">
          {policy && policy.mode === 'none'
            ? 'This sandbox has no network: nothing can leave it.'
            : 'Every request and tunnel through the egress proxy shows up here, allowed or denied.'}
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Decision</th>
                <th scope="col">Host</th>
                <th scope="col" class="num">Port</th>
                <th scope="col">Rule</th>
                <th scope="col" class="num">Bytes out</th>
                <th scope="col" class="num">Bytes in</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => {
                const entry = entryFor(e);
                const o = outcome(e);
                const id = 'net-' + e.seq;
                return (
                  <Fragment key={e.seq}>
                  <tr>
                    <td class="mono small">{clock(e.time)}</td>
                    <td>
                      {o.kind === 'failed' ? (
                        <button type="button" class={'pill pill-button ' + o.color} title={o.reason}
                          aria-expanded={open.has(e.seq) ? 'true' : 'false'} aria-controls={id} onClick={() => toggle(e.seq)}>
                          {o.label}
                        </button>
                      ) : (
                        <Pill value={o.label} kind={o.color} />
                      )}
                    </td>
                    <td class="mono" title={`${e.protocol}${e.addr ? ' to ' + e.addr : ''}`}>
                      {e.host}
                    </td>
                    <td class="num mono">{e.port}</td>
                    <td class="mono small" title={e.reason || ''}>
                      {e.rule || <span class="muted">{e.reason || '—'}</span>}
                    </td>
                    <td class="num">{bytes(e.bytes_up)}</td>
                    <td class="num">{bytes(e.bytes_down)}</td>
                    <td class="row-actions">
                      {e.decision === 'denied' &&
                        (allowed.has(entry) ? (
                          <span class="muted small">now allowed</span>
                        ) : (
                          <button
                            type="button"
                            class="button small"
                            disabled={busy === entry || sb.state !== 'running'}
                            title={sb.state === 'paused' ? 'Paused: resume it to change its network policy' : undefined}
                            onClick={() => allow(e)}
                          >
                            Allow {e.host}
                          </button>
                        ))}
                    </td>
                  </tr>
                  {o.kind === 'failed' && open.has(e.seq) && (
                    <tr class="expanded" id={id}>
                      <td colSpan={8}>
                        <p class="net-failure">
                          Allowed{e.rule ? <> by <span class="mono">{e.rule}</span></> : ''}, but the proxy could not reach{' '}
                          <span class="mono">{e.host}:{e.port}</span> ({e.upstream_error}): <span class="mono">{o.reason}</span>
                        </p>
                      </td>
                    </tr>
                  )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
