// The sandboxes list: polled every 2 s with each running sandbox's
// metrics, so CPU is a rate between two samples.
import { useRef, useState } from 'preact/hooks';
import { api, sandboxPath } from '../api.js';
import { Link, useQuery } from '../router.jsx';
import { Confirm, Dialog, Empty, ErrorText, Field, Icon, Loading, Pill, usePoll } from '../ui/kit.jsx';
import { age, bytes, percent, splitList, timeLeft } from '../format.js';
import { actions, countLabel, isLive, lifeLeft, pauseDeadline } from '../lifecycle.js';
import { NewSandbox } from './newsandbox.jsx';

const POLL = 2000;

// VIEWS are the list's state filter, kept in the URL (?state=): the
// running ones by default (with the paused ones, which hold their
// processes still), the ended ones one click away. Each is the API's
// states it lists.
const VIEWS = [
  ['running', 'Running', ['running', 'creating', 'paused']],
  ['paused', 'Paused', ['paused']],
  ['stopped', 'Stopped', ['stopped', 'failed']],
  ['all', 'All', ['']],
];

export function Sandboxes() {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const [query, setQuery] = useQuery();
  const view = VIEWS.find((v) => v[0] === query.get('state')) || VIEWS[0];
  const state = view[0];
  const meta = query.get('label') || '';
  const setMeta = (v) => setQuery({ label: v }, { replace: true });
  const [metrics, setMetrics] = useState({});
  const [creating, setCreating] = useState(false);
  const [destroying, setDestroying] = useState(null);
  const [extending, setExtending] = useState(null);
  const [acting, setActing] = useState(null); // the id being paused or resumed
  const [actErr, setActErr] = useState(null);
  const prev = useRef({});

  const metaQuery = {};
  let metaErr = null;
  for (const part of splitList(meta)) {
    const i = part.indexOf('=');
    if (i <= 0) metaErr = `Filter "${part}" is not key=value`;
    else metaQuery['metadata.' + part.slice(0, i)] = part.slice(i + 1);
  }

  const refresh = usePoll(
    async (signal) => {
      if (metaErr) return;
      try {
        const all = [];
        for (const st of view[2]) {
          let after = '';
          do {
            const page = await api('/v1/sandboxes', { query: { state: st, after, limit: 1000, ...metaQuery }, signal });
            all.push(...page.sandboxes);
            after = page.next;
          } while (after && all.length < 5000);
        }
        // Live sandboxes first, then the ended ones; newest first in each.
        const live = (s) => (isLive(s.state) ? 0 : 1);
        all.sort((a, b) => live(a) - live(b) || Date.parse(b.created_at) - Date.parse(a.created_at));
        setList(all);
        setErr(null);
        // One call for the metrics of up to 100 running sandboxes.
        const running = all.filter((s) => s.state === 'running').slice(0, 100);
        let got = [];
        if (running.length) {
          const ids = running.map((s) => s.id).join(',');
          const r = await api('/v1/sandboxes/metrics', { query: { ids }, signal }).catch(() => null);
          got = r?.metrics || [];
        }
        const next = {};
        const now = Date.now();
        got.forEach((m) => {
          const id = m.sandbox_id;
          const p = prev.current[id];
          // CPU now is the rate between two samples; until there are two,
          // the average over the sandbox's life stands in.
          let cpu = m.wall_seconds > 0 ? m.cpu_seconds / m.wall_seconds : null;
          if (p && now > p.at) cpu = Math.max(0, (m.cpu_seconds - p.cpu) / ((now - p.at) / 1000));
          next[id] = { ...m, cpu, at: now };
          prev.current[id] = { cpu: m.cpu_seconds, at: now };
        });
        setMetrics(next);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    POLL,
    [state, meta],
  );

  // lifecycle pauses or resumes s from its row.
  const lifecycle = async (s, verb) => {
    setActing(s.id);
    setActErr(null);
    try {
      await api(sandboxPath(s.id, '/' + verb), { method: 'POST' });
      refresh();
    } catch (e) {
      setActErr(e);
    } finally {
      setActing(null);
    }
  };

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Sandboxes</h1>
          <p class="muted">Your tenant's sandboxes, live: updated every 2 seconds.</p>
        </div>
        <button type="button" class="button primary" onClick={() => setCreating(true)}>
          <Icon name="plus" />
          New sandbox
        </button>
      </div>

      <div class="toolbar" role="search">
        <fieldset class="segmented">
          <legend class="sr-only">Show</legend>
          {VIEWS.map(([key, name]) => (
            <label key={key} class={state === key ? 'current' : ''}>
              <input
                type="radio"
                name="sandbox-state"
                value={key}
                checked={state === key}
                onChange={() => setQuery({ state: key === 'running' ? '' : key })}
              />
              {name}
            </label>
          ))}
        </fieldset>
        <div class="field inline grow">
          <label for="filter-meta">Filter by label</label>
          <input
            id="filter-meta"
            class="input mono"
            placeholder="key=value, key2=value2"
            value={meta}
            onInput={(e) => setMeta(e.currentTarget.value)}
          />
        </div>
        <span class="muted small">{list ? countLabel(list, state, view[1]) : ''}</span>
      </div>
      <ErrorText error={metaErr || err || actErr} />

      {list === null && !err ? (
        <Loading />
      ) : list && list.length === 0 ? (
        <Empty title={meta ? 'No sandboxes match this filter' : state === 'all' ? 'No sandboxes yet — create one' : `No ${state} sandboxes`}>
          {meta ? (
            'Clear the label filter to see every sandbox.'
          ) : state === 'stopped' ? (
            'Sandboxes show here once they have ended: destroyed, expired or failed.'
          ) : state === 'paused' ? (
            'Pause a running sandbox from its page or its row: its processes freeze with their memory until it resumes.'
          ) : (
            <>
              <p>A sandbox is an isolated Linux machine for one agent run.{state === 'running' ? ' Ended ones are under Stopped.' : ''}</p>
              <button type="button" class="button primary" onClick={() => setCreating(true)}>
                <Icon name="plus" />
                Create a sandbox
              </button>
            </>
          )}
        </Empty>
      ) : list ? (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Sandbox</th>
                <th scope="col">State</th>
                <th scope="col">Template</th>
                <th scope="col">Age</th>
                <th scope="col">Time left</th>
                <th scope="col" class="num">CPU</th>
                <th scope="col" class="num">Memory</th>
                <th scope="col">Metadata</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <Row
                  key={s.id}
                  s={s}
                  m={metrics[s.id]}
                  busy={acting === s.id}
                  onPause={() => lifecycle(s, 'pause')}
                  onResume={() => lifecycle(s, 'resume')}
                  onDestroy={() => setDestroying(s)}
                  onExtend={() => setExtending(s)}
                />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      {creating && <NewSandbox onClose={() => setCreating(false)} />}
      {destroying && (
        <DestroyDialog
          sandbox={destroying}
          onClose={() => setDestroying(null)}
          onDone={refresh}
        />
      )}
      {extending && <ExtendDialog sandbox={extending} onClose={() => setExtending(null)} onDone={refresh} />}
    </div>
  );
}

function Row({ s, m, busy, onPause, onResume, onDestroy, onExtend }) {
  const can = actions(s.state);
  const memPct = m && s.limits && s.limits.memory_mb ? m.memory_bytes / (s.limits.memory_mb * 1048576) : null;
  return (
    <tr>
      <td>
        <Link href={'/sandboxes/' + encodeURIComponent(s.id)} class="mono strong">
          {s.id}
        </Link>
        {s.reason && <div class="small danger-text">{s.reason}</div>}
      </td>
      <td>
        <Pill value={s.state} />
      </td>
      <td class="mono">{s.template}</td>
      <td>{age(s.created_at)}</td>
      <td title={pauseDeadline(s) || undefined}>{lifeLeft(s)}</td>
      <td class="num">
        {m && m.cpu !== null ? (
          <Meter value={m.cpu / Math.max(s.limits.cpus || 1, 0.01)} label={percent(m.cpu)} />
        ) : (
          '—'
        )}
      </td>
      <td class="num">{m ? <Meter value={memPct} label={bytes(m.memory_bytes)} /> : '—'}</td>
      <td>
        <Metadata m={s.metadata} />
      </td>
      <td class="row-actions">
        {can.resume ? (
          <button type="button" class="button small" onClick={onResume} disabled={busy}>
            Resume
          </button>
        ) : (
          <button type="button" class="button small" onClick={onPause} disabled={busy || !can.pause}>
            Pause
          </button>
        )}
        <button type="button" class="button small" onClick={onExtend} disabled={!can.extend}>
          Extend
        </button>
        <button type="button" class="button small danger-outline" onClick={onDestroy} disabled={!can.destroy}>
          Destroy
        </button>
      </td>
    </tr>
  );
}

function Meter({ value, label }) {
  const v = Math.max(0, Math.min(1, value || 0));
  return (
    <span class="meter">
      <span class="meter-bar" aria-hidden="true">
        <span style={{ width: (v * 100).toFixed(1) + '%' }} class={v > 0.85 ? 'hot' : ''} />
      </span>
      <span>{label}</span>
    </span>
  );
}

export function Metadata({ m }) {
  const entries = Object.entries(m || {});
  if (!entries.length) return <span class="muted">—</span>;
  return (
    <span class="chips">
      {entries.map(([k, v]) => (
        <span class="chip mono" key={k}>
          {k}={v}
        </span>
      ))}
    </span>
  );
}

export function DestroyDialog({ sandbox, onClose, onDone }) {
  return (
    <Confirm
      title="Destroy sandbox?"
      message={
        <>
          <span class="mono">{sandbox.id}</span> and every process in it stop now, and its files are deleted. Its audit log,
          network log and recordings are kept.
        </>
      }
      confirm="Destroy sandbox"
      onClose={onClose}
      onConfirm={async () => {
        await api(sandboxPath(sandbox.id), { method: 'DELETE' });
        onDone && onDone();
      }}
    />
  );
}

export function ExtendDialog({ sandbox, onClose, onDone }) {
  const [add, setAdd] = useState('900');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const left = Math.max(0, Math.floor((Date.parse(sandbox.expires_at) - Date.now()) / 1000));
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      await api(sandboxPath(sandbox.id, '/timeout'), {
        method: 'POST',
        json: { timeout_s: Math.min(86400, Math.max(1, left + Number(add))) },
      });
      onDone && onDone();
      onClose();
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  return (
    <Dialog title="Extend sandbox" onClose={onClose}>
      <form onSubmit={submit} class="stack">
        <p class="muted">
          <span class="mono">{sandbox.id}</span> has {timeLeft(sandbox.expires_at)} left.
        </p>
        <Field label="Extend by">
          <select class="input" value={add} onChange={(e) => setAdd(e.currentTarget.value)}>
            <option value="300">5 minutes</option>
            <option value="900">15 minutes</option>
            <option value="3600">1 hour</option>
            <option value="14400">4 hours</option>
            <option value="86400">24 hours (the most)</option>
          </select>
        </Field>
        <ErrorText error={err} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="button primary" disabled={busy}>
            Extend sandbox
          </button>
        </div>
      </form>
    </Dialog>
  );
}
