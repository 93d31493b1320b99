// One sandbox: a header that stays while the tabs below change, each tab
// its own URL (/sandboxes/ID/TAB).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, sandboxPath } from '../api.js';
import { Link, navigate } from '../router.jsx';
import { Empty, ErrorText, Icon, Loading, Pill, usePoll } from '../ui/kit.jsx';
import { LineChart } from '../ui/chart.jsx';
import { age, bytes, dateTime, duration, number, percent, timeLeft, tokens, usd } from '../format.js';
import { actions, isLive } from '../lifecycle.js';
import { DestroyDialog, ExtendDialog, Metadata } from './sandboxes.jsx';
import { ForkDialog, Origins, PausedBanner, SnapshotDialog } from './lifecycle.jsx';
import { Processes } from './processes.jsx';

import { Files } from './files.jsx';
import { Network } from './network.jsx';
import { Audit } from './audit.jsx';

// xterm.js and asciinema-player are most of the app's weight: their tabs
// load on first use.
const Terminal = lazy(() => import('./terminal.jsx').then((m) => m.Terminal));
const Replay = lazy(() => import('./replay.jsx').then((m) => m.Replay));

function lazy(load) {
  let Component = null;
  let loading = null;
  return function Lazy(props) {
    const [, setLoaded] = useState(false);
    const [err, setErr] = useState(null);
    useEffect(() => {
      if (Component) return;
      loading = loading || load().then((c) => (Component = c));
      loading.then(() => setLoaded(true), (e) => { loading = null; setErr(e); });
    }, []);
    if (Component) return <Component {...props} />;
    return err ? <ErrorText error={'Could not load this tab: ' + err.message} /> : <Loading />;
  };
}

// TABS are the sandbox page's tabs: /sandboxes/ID/KEY.
export const TABS = [
  ['overview', 'Overview'],
  ['processes', 'Processes'],
  ['terminal', 'Terminal'],
  ['files', 'Files'],
  ['network', 'Network'],
  ['audit', 'Audit'],
  ['replay', 'Replay'],
];

export function Sandbox({ id, tab }) {
  const [sb, setSb] = useState(null);
  const [err, setErr] = useState(null);
  const [dialog, setDialog] = useState(null);
  const [busy, setBusy] = useState(false);
  const [actErr, setActErr] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        setSb(await api(sandboxPath(id), { signal }));
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    2000,
    [id],
  );

  if (err && err.status === 404) {
    return (
      <div class="page">
        <h1>Sandbox not found</h1>
        <Empty title={'No sandbox ' + id} icon="alert">
          <p>Your tenant has no sandbox with this id: it may have been removed, or belong to another tenant.</p>
          <Link href="/sandboxes" class="button">Back to the sandboxes</Link>
        </Empty>
      </div>
    );
  }
  if (!sb) return <div class="page">{err ? <ErrorText error={err} /> : <Loading />}</div>;

  const base = '/sandboxes/' + encodeURIComponent(id);
  const current = tab;
  const onKey = (e) => {
    const i = TABS.findIndex((t) => t[0] === current);
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
    if (e.key === 'ArrowLeft') j = (i - 1 + TABS.length) % TABS.length;
    if (e.key === 'Home') j = 0;
    if (e.key === 'End') j = TABS.length - 1;
    if (j < 0) return;
    e.preventDefault();
    navigate(base + '/' + TABS[j][0]);
    requestAnimationFrame(() => document.getElementById('tab-' + TABS[j][0])?.focus());
  };
  const running = sb.state === 'running';
  const can = actions(sb.state);
  // lifecycle pauses or resumes the sandbox: the answer is the sandbox,
  // shown at once; the poll starts over so that an older answer it had
  // in flight cannot show the state from before.
  const lifecycle = async (verb) => {
    setBusy(true);
    setActErr(null);
    try {
      setSb(await api(sandboxPath(id, '/' + verb), { method: 'POST' }));
      refresh();
    } catch (e) {
      setActErr(e);
    } finally {
      setBusy(false);
    }
  };
  // A tab's Resume: its errors are the tab's to show.
  const resume = async () => {
    setSb(await api(sandboxPath(id, '/resume'), { method: 'POST' }));
    refresh();
  };

  return (
    <div class="page">
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href="/sandboxes">Sandboxes</Link>
        <span aria-hidden="true">/</span>
        <span class="mono">{id}</span>
      </nav>
      <div class="page-head">
        <div>
          <h1 class="sandbox-title">
            <span class="mono">{sb.id}</span>
            <Pill value={sb.state} />
          </h1>
          <p class="muted facts">
            <span>
              Template <span class="mono">{sb.template}</span>
            </span>
            <span>Created {age(sb.created_at)} ago</span>
            {running && <span>{timeLeft(sb.expires_at)} left</span>}
            <span>
              {number(sb.limits.cpus)} CPU · {sb.limits.memory_mb} MiB
            </span>
            <Origins sb={sb} />
          </p>
          {sb.reason && <ErrorText error={'Failed: ' + sb.reason} />}
        </div>
        <div class="head-actions">
          {can.resume ? (
            <button type="button" class="button primary" disabled={busy} onClick={() => lifecycle('resume')}>
              <Icon name="play" />
              Resume
            </button>
          ) : (
            <button type="button" class="button" disabled={busy || !can.pause} onClick={() => lifecycle('pause')}
              title="Freeze its processes: memory kept, no CPU, its lifetime clock stopped">
              <Icon name="pause" />
              Pause
            </button>
          )}
          <button type="button" class="button" disabled={!can.snapshot} onClick={() => setDialog('snapshot')}>
            Snapshot
          </button>
          <button type="button" class="button" disabled={!can.fork} onClick={() => setDialog('fork')}>
            Fork
          </button>
          <button type="button" class="button" disabled={!can.extend} onClick={() => setDialog('extend')}>
            Extend
          </button>
          <button type="button" class="button danger-outline" disabled={!can.destroy} onClick={() => setDialog('destroy')}>
            Destroy
          </button>
        </div>
      </div>
      <ErrorText error={actErr} />
      <PausedBanner sb={sb} />

      <div class="tabs" role="tablist" aria-label="Sandbox views" onKeyDown={onKey}>
        {TABS.map(([key, name]) => (
          <Link
            key={key}
            id={'tab-' + key}
            href={base + '/' + key}
            role="tab"
            aria-selected={current === key ? 'true' : 'false'}
            aria-controls="tabpanel"
            tabIndex={current === key ? 0 : -1}
            class={'tab' + (current === key ? ' current' : '')}
          >
            {name}
          </Link>
        ))}
      </div>
      <section id="tabpanel" role="tabpanel" aria-labelledby={'tab-' + current} class="tabpanel">
        {current === 'overview' && <Overview sb={sb} />}
        {current === 'processes' && <Processes sb={sb} />}
        {current === 'terminal' && <Terminal sb={sb} onResume={resume} />}
        {current === 'files' && <Files sb={sb} onResume={resume} />}
        {current === 'network' && <Network sb={sb} />}
        {current === 'audit' && <Audit sb={sb} />}
        {current === 'replay' && <Replay sb={sb} />}
      </section>

      {dialog === 'destroy' && <DestroyDialog sandbox={sb} onClose={() => setDialog(null)} onDone={refresh} />}
      {dialog === 'extend' && <ExtendDialog sandbox={sb} onClose={() => setDialog(null)} onDone={refresh} />}
      {dialog === 'snapshot' && <SnapshotDialog sb={sb} onClose={() => setDialog(null)} />}
      {dialog === 'fork' && <ForkDialog sb={sb} onClose={() => setDialog(null)} />}
    </div>
  );
}

const SPAN = 5 * 60000; // the charts' window: the five minutes the server keeps

// historyOf reads the server's recent readings of a sandbox into samples
// on this browser's clock (the server's time of each, moved by how far
// the answer's Date is from now), with the CPU rate between each two.
async function historyOf(id, signal) {
  const res = await api(sandboxPath(id, '/metrics/history'), { raw: true, signal });
  const h = await res.json();
  const served = Date.parse(res.headers.get('Date'));
  const skew = isNaN(served) ? 0 : Date.now() - served;
  const out = [];
  for (const x of h.samples || []) {
    const t = Date.parse(x.time) + skew;
    const last = out[out.length - 1];
    const cpu = last && t > last.t ? Math.max(0, (x.cpu_seconds - last.cpuTotal) / ((t - last.t) / 1000)) : null;
    out.push({ t, cpuTotal: x.cpu_seconds, cpu, mem: x.memory_bytes });
  }
  return out;
}

function Overview({ sb }) {
  const [m, setM] = useState(null);
  const [err, setErr] = useState(null);
  const samples = useRef([]);
  // ready once the server's history has been asked for: the charts open
  // with it rather than empty.
  const [ready, setReady] = useState(false);
  const seeded = useRef(false); // the poll's closure outlives renders
  const [, setTick] = useState(0);
  // A paused sandbox keeps its charts (they stand still); one that has
  // ended shows its final numbers.
  const live = isLive(sb.state);
  const paused = sb.state === 'paused';
  usePoll(
    async (signal) => {
      try {
        if (!seeded.current && live) {
          try {
            samples.current = await historyOf(sb.id, signal);
          } catch (e) {
            if (e.name === 'AbortError') throw e;
            // No history (an older server): the charts fill as they poll.
          }
          seeded.current = true;
          setReady(true);
        }
        // A paused sandbox's numbers stand still where it stopped (the
        // server reads its cgroup only while it runs, and answers zeros
        // meanwhile): the cards keep the last reading, the charts end at
        // the pause.
        if (paused) return;
        const x = await api(sandboxPath(sb.id, '/metrics'), { signal });
        const now = Date.now();
        const s = samples.current;
        const last = s[s.length - 1];
        const cpu = last && now > last.t ? Math.max(0, (x.cpu_seconds - last.cpuTotal) / ((now - last.t) / 1000)) : null;
        s.push({ t: now, cpuTotal: x.cpu_seconds, cpu, mem: x.memory_bytes });
        while (s.length && s[0].t < now - SPAN) s.shift();
        setM(x);
        setErr(null);
        setTick((t) => t + 1);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    live && !paused ? 2000 : 0,
    [sb.id, sb.state],
  );
  const s = samples.current;
  const cpuPoints = s.filter((p) => p.cpu !== null).map((p) => ({ t: p.t, v: p.cpu }));
  const memPoints = s.map((p) => ({ t: p.t, v: p.mem }));
  const net = sb.network || { mode: 'none' };

  return (
    <div class="stack-lg">
      <ErrorText error={err} />
      <div class="cards">
        <Stat label="CPU time" value={m ? number(m.cpu_seconds, 2) + ' s' : '—'} sub="CPU-seconds, all processes" />
        <Stat label="Memory" value={m ? bytes(m.final ? m.memory_peak_bytes : m.memory_bytes) : '—'} sub={m ? (m.final ? 'peak · ' : `peak ${bytes(m.memory_peak_bytes)} · `) + 'of ' + sb.limits.memory_mb + ' MiB' : 'of ' + sb.limits.memory_mb + ' MiB'} />
        <Stat label="Egress" value={m ? bytes(m.egress_bytes_out + m.egress_bytes_in) : '—'} sub={m ? `${bytes(m.egress_bytes_out)} out · ${bytes(m.egress_bytes_in)} in` : ''} />
        <Stat label="Commands" value={m ? number(m.exec_count, 0) : '—'} sub={m ? 'over ' + duration(m.wall_seconds) : ''} />
        <Stat label="Model tokens" value={m && m.model ? number(tokens(m.model), 0) : '—'} sub={m && m.model ? modelSub(m.model) : 'counted at the egress proxy'} />
        <Stat label="Cost" value={m && m.cost_usd ? usd(m.cost_usd.total) : '—'} sub={m && m.cost_usd ? `model ${usd(m.cost_usd.model)} · compute ${usd(m.cost_usd.compute)}` : 'no price table on this server'} />
      </div>
      {live && !ready ? (
        <Loading label="Loading the last minutes…" />
      ) : live ? (
        <>
          {paused && <p class="muted">Paused: the numbers and charts stand still until it resumes.</p>}
          <div class="charts2">
            <LineChart label="CPU" series={[{ name: 'CPU', points: cpuPoints }]} format={(v) => percent(v)} window={SPAN} />
            <LineChart label="Memory in use" series={[{ name: 'Memory', points: memPoints }]} format={bytes} window={SPAN} binary />
          </div>
        </>
      ) : (
        <p class="muted">The sandbox has ended: the numbers above are final{m && m.ended_at ? ` (ended ${dateTime(m.ended_at)})` : ''}.</p>
      )}
      <div class="panel">
        <h2>Details</h2>
        <dl class="details">
          <dt>Created</dt>
          <dd>{dateTime(sb.created_at)}</dd>
          <dt>Expires</dt>
          <dd>{dateTime(sb.expires_at)}</dd>
          {paused && (
            <>
              <dt>Paused</dt>
              <dd>{dateTime(sb.paused_at)}</dd>
            </>
          )}
          <dt>Idle timeout</dt>
          <dd>{sb.idle_timeout_s ? `${duration(sb.idle_timeout_s)}, then ${sb.idle_action === 'pause' ? 'paused' : 'destroyed'}` : 'none'}</dd>
          <dt>While paused</dt>
          <dd>
            {sb.auto_resume ? 'Resumes on any call that needs it' : 'Calls that need it running answer “paused”'} · destroyed after{' '}
            {sb.max_paused_s ? duration(sb.max_paused_s) : '7d 0h'} paused
          </dd>
          <dt>Made from</dt>
          <dd>
            {sb.snapshot || sb.fork_of ? <Origins sb={sb} /> : <>Template <span class="mono">{sb.template}</span></>}
          </dd>
          <dt>Limits</dt>
          <dd>
            {number(sb.limits.cpus)} CPU · {sb.limits.memory_mb} MiB memory · {sb.limits.disk_mb} MiB disk · {sb.limits.pids} processes
          </dd>
          <dt>Node</dt>
          <dd class="mono">{sb.node || '—'}</dd>
          <dt>Working directory</dt>
          <dd class="mono">{sb.workdir || '/home/user'}</dd>
          <dt>Network</dt>
          <dd>
            {net.mode === 'none' ? 'No network' : 'Allow-list'}
            {net.allow && net.allow.length > 0 && (
              <span class="chips">
                {net.allow.map((h) => (
                  <span class="chip mono" key={h}>{h}</span>
                ))}
              </span>
            )}
          </dd>
          <dt>Volumes</dt>
          <dd>
            {sb.volumes && sb.volumes.length ? (
              <span class="chips">
                {sb.volumes.map((v) => (
                  <span class="chip mono" key={v.name + v.path}>
                    {v.name} → {v.path}{v.read_only ? ' (read-only)' : ''}
                  </span>
                ))}
              </span>
            ) : (
              <span class="muted">none</span>
            )}
          </dd>
          <dt>Metadata</dt>
          <dd>
            <Metadata m={sb.metadata} />
          </dd>
        </dl>
      </div>
    </div>
  );
}

function Stat({ label, value, sub }) {
  return (
    <div class="card stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value">{value}</div>
      <div class="stat-sub">{sub}</div>
    </div>
  );
}

// modelSub says what a sandbox's model calls were: how many, and their
// input (cached apart) and output tokens.
function modelSub(m) {
  const calls = `${number(m.calls, 0)} call${m.calls === 1 ? '' : 's'}`;
  const unread = m.unmetered_calls ? ` (${number(m.unmetered_calls, 0)} unread)` : '';
  return `${calls}${unread} · ${number(m.input_tokens, 0)} in · ${number(m.cached_input_tokens, 0)} cached · ${number(m.output_tokens, 0)} out`;
}
