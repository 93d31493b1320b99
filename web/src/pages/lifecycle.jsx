// A sandbox's lifecycle on its page: the paused banner and the panel a
// tab shows instead of failing while paused, where it came from, and the
// Snapshot and Fork dialogs.
import { useState } from 'preact/hooks';
import { api, sandboxPath } from '../api.js';
import { Link } from '../router.jsx';
import { Dialog, ErrorText, Field, Icon, Notice } from '../ui/kit.jsx';
import { bytes } from '../format.js';
import { MAX_FORKS, origins, parseForkCount, pauseDeadline, pausedFor, pausedMessage, snapshotNameError } from '../lifecycle.js';

// PausedBanner says, above the tabs, what paused means for this sandbox.
export function PausedBanner({ sb }) {
  if (sb.state !== 'paused') return null;
  const since = pausedFor(sb);
  return (
    <div class="notice paused" role="status">
      <Icon name="pause" />
      <span>
        Paused{since ? ` ${since} ago` : ''}: its processes are frozen with their memory, and its lifetime clock is stopped
        until it resumes; {pauseDeadline(sb)}.
      </span>
    </div>
  );
}

// PausedPanel stands in for a tab that needs the sandbox running (the
// API answers its calls 409 "paused"): it says so, with a way out.
export function PausedPanel({ what, onResume }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const resume = async () => {
    setBusy(true);
    setErr(null);
    try {
      await onResume();
    } catch (e) {
      setErr(e);
    }
    setBusy(false);
  };
  return (
    <div class="empty paused-panel">
      <Icon name="pause" size={28} />
      <p class="empty-title">{pausedMessage(what)}</p>
      <div class="muted">
        <p>Its processes are frozen: nothing runs in it until it resumes, with everything where it was.</p>
        {onResume && (
          <button type="button" class="button primary" onClick={resume} disabled={busy}>
            <Icon name="play" />
            Resume sandbox
          </button>
        )}
        <ErrorText error={err} />
      </div>
    </div>
  );
}

// Origins are the facts of where sb came from, each a link.
export function Origins({ sb }) {
  return origins(sb).map((o) => (
    <span key={o.label}>
      {o.label}{' '}
      <Link href={o.href} class="mono">
        {o.name}
      </Link>
    </span>
  ));
}

export function SnapshotDialog({ sb, onClose }) {
  const [name, setName] = useState('');
  const [touched, setTouched] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const [made, setMade] = useState(null);
  const nameErr = snapshotNameError(name);
  const submit = async (e) => {
    e.preventDefault();
    setTouched(true);
    if (nameErr) {
      e.currentTarget.querySelector('input')?.focus();
      return;
    }
    setBusy(true);
    setErr(null);
    try {
      const n = name.trim();
      setMade(await api(sandboxPath(sb.id, '/snapshots'), { method: 'POST', json: n ? { name: n } : {} }));
    } catch (x) {
      setErr(x);
    }
    setBusy(false);
  };
  return (
    <Dialog title="Take a snapshot" onClose={onClose}>
      {made ? (
        <div class="stack">
          <Notice>
            Snapshot <span class="mono">{made.name}</span> taken: {bytes(made.size_bytes)} of files, counted in your storage.
          </Notice>
          <div class="actions">
            <Link href={'/snapshots?name=' + encodeURIComponent(made.name)} class="button">
              Open in Snapshots
            </Link>
            <button type="button" class="button primary" onClick={onClose}>
              Close
            </button>
          </div>
        </div>
      ) : (
        <form aria-label="Take a snapshot" onSubmit={submit} class="stack">
          <p class="muted">
            Saves the files of <span class="mono">{sb.id}</span> as they are now (its workspace and everything it wrote
            elsewhere), to start new sandboxes from. Processes and memory are not saved; the sandbox is frozen for the instant it
            takes.
          </p>
          <Field label="Name" hint="Optional: letters, digits, '.', '_' and '-'. Empty: the server picks one." error={touched ? nameErr : null}>
            <input class="input mono" autocomplete="off" spellcheck={false} value={name} maxLength={80}
              onInput={(e) => setName(e.currentTarget.value)} onBlur={() => setTouched(true)} />
          </Field>
          <ErrorText error={err} />
          <div class="actions">
            <button type="button" class="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" class="button primary" disabled={busy}>
              {busy ? 'Taking snapshot…' : 'Take snapshot'}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

export function ForkDialog({ sb, onClose }) {
  const [count, setCount] = useState('1');
  const [touched, setTouched] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const [forks, setForks] = useState(null);
  let countErr = null;
  try {
    parseForkCount(count);
  } catch (x) {
    countErr = x.message;
  }
  const submit = async (e) => {
    e.preventDefault();
    setTouched(true);
    if (countErr) {
      e.currentTarget.querySelector('input')?.focus();
      return;
    }
    setBusy(true);
    setErr(null);
    try {
      const r = await api(sandboxPath(sb.id, '/fork'), { method: 'POST', json: { count: parseForkCount(count) } });
      setForks(r.sandboxes);
    } catch (x) {
      setErr(x);
    }
    setBusy(false);
  };
  return (
    <Dialog title="Fork sandbox" onClose={onClose}>
      {forks ? (
        <div class="stack">
          <Notice>
            Made {forks.length} sandbox{forks.length === 1 ? '' : 'es'} from <span class="mono">{sb.id}</span>.
          </Notice>
          <ul class="fork-list" aria-label="The forks">
            {forks.map((f) => (
              <li key={f.id}>
                <Link href={'/sandboxes/' + encodeURIComponent(f.id)} class="mono">
                  {f.id}
                </Link>
              </li>
            ))}
          </ul>
          <div class="actions">
            <button type="button" class="button primary" onClick={onClose}>
              Close
            </button>
          </div>
        </div>
      ) : (
        <form aria-label="Fork sandbox" onSubmit={submit} class="stack">
          <p class="muted">
            New sandboxes, each starting on a copy of the files of <span class="mono">{sb.id}</span> as they are now, with its
            limits, network and secrets. Processes and memory are not copied: each fork starts fresh.
          </p>
          <Field label="How many" hint={`1 to ${MAX_FORKS}; all are made, or none.`} error={touched ? countErr : null}>
            <input class="input small-number" type="number" min="1" max={MAX_FORKS} step="1" inputMode="numeric" value={count}
              onInput={(e) => setCount(e.currentTarget.value)} onBlur={() => setTouched(true)} />
          </Field>
          <ErrorText error={err} />
          <div class="actions">
            <button type="button" class="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" class="button primary" disabled={busy}>
              {busy ? 'Forking…' : 'Fork'}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
