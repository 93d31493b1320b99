// The sandboxes list: polled every 2 s with each running sandbox's
// metrics, so CPU is a rate between two samples.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, sandboxPath } from '../api.js';
import { Link, navigate } from '../router.jsx';
import { Confirm, Dialog, Empty, ErrorText, Field, Icon, Loading, Pill, usePoll } from '../ui/kit.jsx';
import { age, bytes, parseMetadata, percent, splitList, timeLeft } from '../format.js';

const POLL = 2000;

export function Sandboxes() {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const [state, setState] = useState('');
  const [meta, setMeta] = useState('');
  const [metrics, setMetrics] = useState({});
  const [creating, setCreating] = useState(false);
  const [destroying, setDestroying] = useState(null);
  const [extending, setExtending] = useState(null);
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
        let after = '';
        do {
          const page = await api('/v1/sandboxes', { query: { state, after, limit: 1000, ...metaQuery }, signal });
          all.push(...page.sandboxes);
          after = page.next;
        } while (after && all.length < 5000);
        // Live sandboxes first, then the ended ones; newest first in each.
        const live = (s) => (s.state === 'running' || s.state === 'creating' ? 0 : 1);
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

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Sandboxes</h1>
          <p class="muted">Every sandbox of your tenant, live. Updated every 2 seconds.</p>
        </div>
        <button type="button" class="button primary" onClick={() => setCreating(true)}>
          <Icon name="plus" />
          New sandbox
        </button>
      </div>

      <div class="toolbar" role="search">
        <div class="field inline">
          <label for="filter-state">State</label>
          <select id="filter-state" class="input" value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">All states</option>
            <option value="running">running</option>
            <option value="creating">creating</option>
            <option value="stopped">stopped</option>
            <option value="failed">failed</option>
          </select>
        </div>
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
        <span class="muted small">{list ? `${list.length} sandbox${list.length === 1 ? '' : 'es'}` : ''}</span>
      </div>
      <ErrorText error={metaErr || err} />

      {list === null && !err ? (
        <Loading />
      ) : list && list.length === 0 ? (
        <Empty title={state || meta ? 'No sandboxes match these filters' : 'No sandboxes yet — create one'}>
          {state || meta ? (
            'Clear the filters to see every sandbox.'
          ) : (
            <>
              <p>A sandbox is an isolated Linux machine for one agent run.</p>
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
                <Row key={s.id} s={s} m={metrics[s.id]} onDestroy={() => setDestroying(s)} onExtend={() => setExtending(s)} />
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

function Row({ s, m, onDestroy, onExtend }) {
  const live = s.state === 'running' || s.state === 'creating';
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
      <td>{live ? timeLeft(s.expires_at) : '—'}</td>
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
        <button type="button" class="button small" onClick={onExtend} disabled={s.state !== 'running'}>
          Extend
        </button>
        <button type="button" class="button small danger-outline" onClick={onDestroy} disabled={s.state === 'stopped'}>
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

function NewSandbox({ onClose }) {
  const [f, setF] = useState({
    template: 'base', cpus: '1', memory: '512', timeout: '300', hosts: '', secrets: '', metadata: '', network: 'none',
    disk: '', pids: '', idle: '',
  });
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const [templates, setTemplates] = useState([]);
  useEffect(() => {
    const ctl = new AbortController();
    api('/v1/templates', { signal: ctl.signal })
      .then((r) => setTemplates(r.templates || []))
      .catch((x) => x.name !== 'AbortError' && setErr(x));
    return () => ctl.abort();
  }, []);
  const set = (k) => (e) => {
    const v = e.currentTarget.value;
    setF((o) => ({ ...o, [k]: v, ...(k === 'hosts' && v.trim() ? { network: 'allowlist' } : {}) }));
  };

  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    let metadata;
    try {
      metadata = parseMetadata(f.metadata);
    } catch (x) {
      setErr(x.message);
      return;
    }
    const allow = splitList(f.hosts);
    const body = {
      template: f.template.trim() || undefined,
      cpus: f.cpus === '' ? undefined : Number(f.cpus),
      memory_mb: f.memory === '' ? undefined : Number(f.memory),
      timeout_s: f.timeout === '' ? undefined : Number(f.timeout),
      metadata: Object.keys(metadata).length ? metadata : undefined,
      secrets: splitList(f.secrets).length ? splitList(f.secrets) : undefined,
      disk_mb: f.disk === '' ? undefined : Number(f.disk),
      pids: f.pids === '' ? undefined : Number(f.pids),
      idle_timeout_s: f.idle === '' ? undefined : Number(f.idle),
    };
    if (allow.length || f.network === 'allowlist') body.network = { mode: 'allowlist', allow };
    setBusy(true);
    try {
      const s = await api('/v1/sandboxes', { method: 'POST', json: body });
      onClose();
      navigate('/sandboxes/' + encodeURIComponent(s.id));
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };

  return (
    <Dialog title="New sandbox" onClose={onClose} wide>
      <form aria-label="New sandbox" onSubmit={submit} class="form-grid">
        <div class="row2">
          <Field label="Template" hint={(templates.find((t) => t.name === f.template) || {}).description || 'The root file system.'}>
            <select class="input mono" value={f.template} onChange={set('template')} autofocus>
              {(templates.length ? templates : [{ name: f.template }]).map((t) => (
                <option key={t.name} value={t.name}>{t.name}</option>
              ))}
            </select>
          </Field>
          <Field label="Network" hint="Allowed hosts switch the proxy on.">
            <select class="input wide-select" value={f.network} onChange={set('network')}>
              <option value="none">No network</option>
              <option value="allowlist">Egress proxy, allowed hosts only</option>
            </select>
          </Field>
        </div>
        <div class="row3">
          <Field label="CPUs">
            <input class="input" type="number" min="0" step="0.25" value={f.cpus} onInput={set('cpus')} />
          </Field>
          <Field label="Memory (MiB)">
            <input class="input" type="number" min="0" step="64" value={f.memory} onInput={set('memory')} />
          </Field>
          <Field label="Timeout (s)" hint="At most 86400.">
            <input class="input" type="number" min="0" max="86400" value={f.timeout} onInput={set('timeout')} />
          </Field>
        </div>
        <Field label="Allowed hosts" hint="Comma or newline separated: pypi.org, *.pythonhosted.org, api.example.com:8443.">
          <textarea class="input mono" rows="2" value={f.hosts} onInput={set('hosts')} />
        </Field>
        <div class="row2">
          <Field label="Secrets" hint="Names of your secrets, comma separated; the sandbox sees placeholders.">
            <textarea class="input mono" rows="2" value={f.secrets} onInput={set('secrets')} />
          </Field>
          <Field label="Metadata" hint="key=value, one per line.">
            <textarea class="input mono" rows="2" value={f.metadata} onInput={set('metadata')} />
          </Field>
        </div>
        <details class="more">
          <summary>More limits</summary>
          <div class="row3">
            <Field label="Disk (MiB)" hint="Default 1024.">
              <input class="input" type="number" min="0" value={f.disk} onInput={set('disk')} />
            </Field>
            <Field label="Max processes" hint="Default 256.">
              <input class="input" type="number" min="0" value={f.pids} onInput={set('pids')} />
            </Field>
            <Field label="Idle after (s)" hint="Destroyed when unused this long; empty: never.">
              <input class="input" type="number" min="0" max="86400" value={f.idle} onInput={set('idle')} />
            </Field>
          </div>
        </details>
        <ErrorText error={err} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="button primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create sandbox'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
