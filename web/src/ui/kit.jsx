// Small building blocks every page shares.
import { cloneElement } from 'preact';
import { useEffect, useRef, useState, useCallback } from 'preact/hooks';

// Dialog is a native modal <dialog>: the browser makes the rest of the page
// inert (focus stays inside) and Escape closes it.
export function Dialog({ title, onClose, children, wide }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    const focus = d.querySelector('[autofocus], input, select, textarea, button.primary, button.danger');
    if (focus) focus.focus();
    return () => d && d.open && d.close();
  }, []);
  return (
    <dialog
      ref={ref}
      class={'dialog' + (wide ? ' wide' : '')}
      aria-labelledby="dialog-title"
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onClick={(e) => {
        if (e.target === ref.current) onClose(); // the backdrop
      }}
    >
      <div class="dialog-body">
        <h2 id="dialog-title">{title}</h2>
        {children}
      </div>
    </dialog>
  );
}

// Confirm asks before something that cannot be undone.
export function Confirm({ title, message, confirm, onConfirm, onClose, danger = true }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const go = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      await onConfirm();
      onClose();
    } catch (x) {
      setErr(x.message);
      setBusy(false);
    }
  };
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={go}>
        <p class="muted">{message}</p>
        <ErrorText error={err} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class={'button ' + (danger ? 'danger' : 'primary')} disabled={busy}>
            {confirm}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function ErrorText({ error }) {
  if (!error) return null;
  return (
    <div class="alert" role="alert">
      <Icon name="alert" />
      <span>{typeof error === 'string' ? error : error.message}</span>
    </div>
  );
}

export function Notice({ children, kind = 'ok' }) {
  if (!children) return null;
  return (
    <div class={'notice ' + kind} role="status">
      <Icon name={kind === 'ok' ? 'check' : 'info'} />
      <span>{children}</span>
    </div>
  );
}

const stateKind = {
  running: 'green', ready: 'green', allowed: 'green', delivered: 'green', exited: 'gray',
  creating: 'blue', busy: 'blue', pending: 'blue',
  // paused has a look of its own (two bars, not a dot): frozen, not
  // ended, and not to be mistaken for running.
  paused: 'paused', unreachable: 'amber',
  stopped: 'gray', ended: 'gray',
  failed: 'red', denied: 'red', lost: 'red',
};

export function Pill({ value, kind }) {
  return <span class={'pill ' + (kind || stateKind[value] || 'gray')}>{value}</span>;
}

export function Empty({ title, children, icon = 'box' }) {
  return (
    <div class="empty">
      <Icon name={icon} size={28} />
      <p class="empty-title">{title}</p>
      {children && <div class="muted">{children}</div>}
    </div>
  );
}

export function Loading({ label = 'Loading…' }) {
  return (
    <div class="loading" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {label}
    </div>
  );
}

// usePoll calls load now and every ms milliseconds while mounted, and
// again when deps change. load gets an AbortSignal.
export function usePoll(load, ms, deps = []) {
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let alive = true;
    let timer;
    const ctl = new AbortController();
    const run = async () => {
      try {
        await load(ctl.signal);
      } catch (e) {
        if (e.name !== 'AbortError') console.warn(e);
      }
      if (alive && ms) timer = setTimeout(run, ms);
    };
    run();
    return () => {
      alive = false;
      clearTimeout(timer);
      ctl.abort();
    };
  }, [...deps, tick]);
  return refresh;
}

// useNow is the time, re-read every ms milliseconds while mounted: for
// countdowns that move between polls.
export function useNow(ms = 1000) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

const paths = {
  box: 'M21 8 12 3 3 8v8l9 5 9-5V8ZM3 8l9 5 9-5M12 13v8',
  key: 'M15 7a4 4 0 1 1-3.9 4.9L3 20v-3h3v-3h3l2.1-2.1A4 4 0 0 1 15 7Zm1.5 2.5h.01',
  chart: 'M4 20V10M10 20V4M16 20v-7M22 20H2',
  lock: 'M6 11h12v10H6zM8 11V7a4 4 0 0 1 8 0v4',
  users: 'M16 21v-2a4 4 0 0 0-4-4H6a4 4 0 0 0-4 4v2M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8ZM22 21v-2a4 4 0 0 0-3-3.9M16 3.1a4 4 0 0 1 0 7.8',
  alert: 'M12 8v5m0 3h.01M10.3 3.9 1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0Z',
  check: 'M20 6 9 17l-5-5',
  info: 'M12 16v-4m0-4h.01M12 22a10 10 0 1 0 0-20 10 10 0 0 0 0 20Z',
  folder: 'M3 6a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2Z',
  file: 'M14 3H6a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2V9Zm0 0v6h6',
  link: 'M10 14a5 5 0 0 0 7 0l3-3a5 5 0 0 0-7-7l-1 1m2 5a5 5 0 0 0-7 0l-3 3a5 5 0 0 0 7 7l1-1',
  upload: 'M12 16V4m0 0-5 5m5-5 5 5M4 20h16',
  terminal: 'M4 17l6-5-6-5m8 12h8',
  play: 'M6 4l14 8-14 8Z',
  up: 'M12 19V5m0 0-6 6m6-6 6 6',
  plus: 'M12 5v14M5 12h14',
  refresh: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
  logout: 'M15 4h4a1 1 0 0 1 1 1v14a1 1 0 0 1-1 1h-4M10 17l5-5-5-5m5 5H3',
  shield: 'M12 3 4 6v6c0 5 3.5 8 8 9 4.5-1 8-4 8-9V6Z',
  pause: 'M9 5v14M15 5v14',
  camera: 'M4 8h3l2-3h6l2 3h3v11H4ZM12 16.5a3 3 0 1 0 0-6 3 3 0 0 0 0 6Z',
  fork: 'M6 3v4a4 4 0 0 0 4 4h4a4 4 0 0 0 4-4V3M12 11v10',
  disk: 'M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3Zm0 0v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3',
  layers: 'M12 3 2 8l10 5 10-5ZM2 13l10 5 10-5M2 17.5l10 5 10-5',
  bell: 'M12 3a5 5 0 0 0-5 5v4l-2 4h14l-2-4V8a5 5 0 0 0-5-5ZM10 19a2 2 0 0 0 4 0',
};

export function Icon({ name, size = 16 }) {
  return (
    <svg class="icon" width={size} height={size} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={paths[name] || paths.box} />
    </svg>
  );
}

// Field is a labelled control; hint is read out as its description, and
// error, when set, before it (the control is marked invalid).
let fieldSeq = 0;
export function Field({ label, hint, error, children, id }) {
  const [fid] = useState(() => id || 'f' + ++fieldSeq);
  const hid = hint ? fid + '-hint' : undefined;
  const eid = error ? fid + '-error' : undefined;
  const described = [eid, hid].filter(Boolean).join(' ') || undefined;
  const child = Array.isArray(children) ? children[0] : children;
  const control = child && child.props
    ? cloneElement(child, { id: fid, 'aria-describedby': described, 'aria-invalid': error ? 'true' : undefined })
    : child;
  return (
    <div class={'field' + (error ? ' invalid' : '')}>
      <label for={fid}>{label}</label>
      {control}
      {error && (
        <p class="field-error" id={eid}>
          <Icon name="alert" size={13} />
          <span>{error}</span>
        </p>
      )}
      {hint && (
        <p class="hint" id={hid}>
          {hint}
        </p>
      )}
    </div>
  );
}

// copy puts text on the clipboard.
export async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

export function Logo({ size = 22 }) {
  return (
    <svg class="logo" width={size} height={size} viewBox="0 0 32 32" aria-hidden="true">
      <rect x="2" y="2" width="28" height="28" rx="8" class="logo-bg" />
      <path d="M10 22V14a6 6 0 0 1 12 0v8" class="logo-fg" />
      <rect x="8" y="17" width="16" height="9" rx="2.5" class="logo-fg-fill" />
    </svg>
  );
}

