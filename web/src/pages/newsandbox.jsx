// The create form: a sandbox's template, limits, network, labels, volumes
// and what happens when it idles or is paused. Its duration fields take
// what airlock create --timeout takes. Given a snapshot, it makes a
// sandbox that starts on the snapshot's files (and template) instead.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { navigate } from '../router.jsx';
import { Dialog, ErrorText, Field } from '../ui/kit.jsx';
import { bytes, parseMetadata, splitList } from '../format.js';
import { parseSeconds } from '../duration.js';
import { MAX_PAUSED_S, mountErrors, mountsBody, pauseBody } from '../volumes.js';
import { Mounts } from './mounts.jsx';

// durationError is what is wrong with a duration field's text, or null.
function durationError(text, opts) {
  try {
    parseSeconds(text, opts);
    return null;
  } catch (x) {
    return x.message;
  }
}

export function NewSandbox({ onClose, snapshot }) {
  const [f, setF] = useState({
    template: 'base', cpus: '1', memory: '512', timeout: '5m', hosts: '', secrets: '', metadata: '', network: 'none',
    disk: '', pids: '', idle: '', idleAction: 'destroy', autoResume: false, maxPaused: '',
  });
  const [volumes, setVolumes] = useState([]);
  const [mounts, setMounts] = useState([]);
  const [mountsLeft, setMountsLeft] = useState({}); // rows whose path was left, by key
  const [sent, setSent] = useState(false); // tried once: every error shows
  // The duration fields say what is wrong with them once left or on
  // submit, not while a person is still typing "1h3".
  const [touched, setTouched] = useState({});
  const durations = {
    timeout: durationError(f.timeout, {}),
    idle: durationError(f.idle, { allowZero: true }),
    maxPaused: durationError(f.maxPaused, { max: MAX_PAUSED_S }),
  };
  const mountErr = mountErrors(mounts);
  const idleSet = !durations.idle && (parseSeconds(f.idle, { allowZero: true }) || 0) > 0;
  const shown = (k) => (touched[k] ? durations[k] : null);
  const leave = (k) => () => setTouched((t) => ({ ...t, [k]: true }));
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const [templates, setTemplates] = useState([]);
  useEffect(() => {
    if (snapshot) return undefined; // the snapshot's template
    const ctl = new AbortController();
    api('/v1/templates', { signal: ctl.signal })
      .then((r) => setTemplates(r.templates || []))
      .catch((x) => x.name !== 'AbortError' && setErr(x));
    return () => ctl.abort();
  }, []);
  useEffect(() => {
    const ctl = new AbortController();
    api('/v1/volumes', { signal: ctl.signal })
      .then((r) => setVolumes((r.volumes || []).slice().sort((a, b) => a.name.localeCompare(b.name))))
      .catch((x) => x.name !== 'AbortError' && setErr(x));
    return () => ctl.abort();
  }, []);
  const set = (k) => (e) => {
    const t = e.currentTarget;
    const v = t.type === 'checkbox' ? t.checked : t.value;
    setF((o) => ({ ...o, [k]: v, ...(k === 'hosts' && v.trim() ? { network: 'allowlist' } : {}) }));
  };

  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const bad = Object.keys(durations).filter((k) => durations[k]);
    if (bad.length || !mountErr.ok) {
      setTouched({ timeout: true, idle: true, maxPaused: true });
      setSent(true);
      if (bad.some((k) => k !== 'timeout')) e.currentTarget.querySelector('details.more').open = true;
      const badMount = mountErr.paths.findIndex(Boolean);
      const first = bad[0] || (badMount >= 0 ? 'mount-' + badMount : '');
      e.currentTarget.querySelector(`[data-field="${first}"]`)?.focus();
      return;
    }
    let metadata;
    try {
      metadata = parseMetadata(f.metadata);
    } catch (x) {
      setErr(x.message);
      return;
    }
    const allow = splitList(f.hosts);
    const body = {
      template: snapshot ? undefined : f.template.trim() || undefined,
      snapshot: snapshot ? snapshot.name : undefined,
      cpus: f.cpus === '' ? undefined : Number(f.cpus),
      memory_mb: f.memory === '' ? undefined : Number(f.memory),
      timeout_s: parseSeconds(f.timeout),
      metadata: Object.keys(metadata).length ? metadata : undefined,
      secrets: splitList(f.secrets).length ? splitList(f.secrets) : undefined,
      disk_mb: f.disk === '' ? undefined : Number(f.disk),
      pids: f.pids === '' ? undefined : Number(f.pids),
      idle_timeout_s: parseSeconds(f.idle, { allowZero: true }),
      volumes: mountsBody(mounts),
      ...pauseBody({ autoResume: f.autoResume, idle: idleSet, idleAction: f.idleAction, maxPaused: f.maxPaused }),
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
    <Dialog title={snapshot ? 'New sandbox from snapshot' : 'New sandbox'} onClose={onClose} wide>
      <form aria-label="New sandbox" onSubmit={submit} class="form-grid">
        <div class="row2">
          {snapshot ? (
            <Field label="Snapshot" hint={`Its files (${bytes(snapshot.size_bytes)}) on template ${snapshot.template}, taken of ${snapshot.sandbox}.`}>
              <input class="input mono" value={snapshot.name} readOnly />
            </Field>
          ) : (
            <Field label="Template" hint={(templates.find((t) => t.name === f.template) || {}).description || 'The root file system.'}>
              <select class="input mono" value={f.template} onChange={set('template')} autofocus>
                {(templates.length ? templates : [{ name: f.template }]).map((t) => (
                  <option key={t.name} value={t.name}>{t.name}</option>
                ))}
              </select>
            </Field>
          )}
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
          <Field label="Timeout" hint="As airlock create --timeout takes it: 90s, 10m, 1h30m; at most 24h." error={shown('timeout')}>
            <input class="input mono" data-field="timeout" inputMode="text" autocomplete="off" spellcheck={false} value={f.timeout} onInput={set('timeout')} onBlur={leave('timeout')} />
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
        <Mounts
          volumes={volumes}
          mounts={mounts}
          setMounts={setMounts}
          errors={mountErr}
          touched={mountsLeft}
          onLeave={(key) => setMountsLeft((t) => ({ ...t, [key]: true }))}
          all={sent}
        />
        <details class="more">
          <summary>More limits</summary>
          <div class="row3">
            <Field label="Disk (MiB)" hint="Default 1024.">
              <input class="input" type="number" min="0" value={f.disk} onInput={set('disk')} />
            </Field>
            <Field label="Max processes" hint="Default 256.">
              <input class="input" type="number" min="0" value={f.pids} onInput={set('pids')} />
            </Field>
            <Field label="Idle after" hint="Unused this long (e.g. 10m), it is destroyed, or paused; empty: never." error={shown('idle')}>
              <input class="input mono" data-field="idle" autocomplete="off" spellcheck={false} value={f.idle} onInput={set('idle')} onBlur={leave('idle')} />
            </Field>
          </div>
          <div class="row3">
            {idleSet ? (
              <Field label="When idle" hint="Paused keeps its processes and memory, to resume later.">
                <select class="input wide-select" value={f.idleAction} onChange={set('idleAction')}>
                  <option value="destroy">Destroy it</option>
                  <option value="pause">Pause it</option>
                </select>
              </Field>
            ) : (
              <div class="field muted small idle-note">Set Idle after to pause an idle sandbox instead of destroying it.</div>
            )}
            <Field label="Max paused" hint="Destroyed once paused this long, e.g. 48h; at most 720h; empty: 7 days." error={shown('maxPaused')}>
              <input class="input mono" data-field="maxPaused" autocomplete="off" spellcheck={false} value={f.maxPaused} onInput={set('maxPaused')} onBlur={leave('maxPaused')} />
            </Field>
            <div class="field">
              <span class="field-label">While paused</span>
              <label class="check">
                <input type="checkbox" checked={f.autoResume} onChange={set('autoResume')} /> Auto-resume
              </label>
              <p class="hint">A call that needs it running (exec, files, terminal) resumes it instead of answering “paused”.</p>
            </div>
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
