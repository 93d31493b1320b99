// The terminal tab: xterm.js joined to a session over its WebSocket.
// Binary messages carry terminal bytes both ways; text messages are JSON
// control: {"type":"resize"} from us, "exit" and "error" from the server.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Terminal as XTerm } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { api, sandboxPath } from '../api.js';
import { Confirm, Empty, ErrorText, Icon, Pill, usePoll } from '../ui/kit.jsx';
import { age } from '../format.js';
import { explain, pausedMessage } from '../lifecycle.js';
import { PausedPanel } from './lifecycle.jsx';

export function Terminal({ sb, onResume }) {
  const [sessions, setSessions] = useState(null);
  const [attached, setAttached] = useState(null);
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const [ending, setEnding] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        const r = await api(sandboxPath(sb.id, '/sessions'), { signal });
        setSessions(r.sessions);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    3000,
    [sb.id],
  );
  const running = sb.state === 'running';
  // Paused, the shells are frozen and the server refuses new sessions
  // (409 paused): the tab says so instead of a terminal that hangs. An
  // attached session is let go, and taken up again on resume.
  const paused = sb.state === 'paused';

  const create = async () => {
    setErr(null);
    setBusy(true);
    try {
      const { cols, rows } = guessSize();
      const s = await api(sandboxPath(sb.id, '/sessions'), { method: 'POST', json: { mode: 'interactive', cols, rows } });
      setAttached(s.id);
      refresh();
    } catch (e) {
      setErr(explain(e, 'terminal'));
    }
    setBusy(false);
  };

  const live = (sessions || []).filter((s) => s.state !== 'ended');
  return (
    <div class="stack-lg">
      {paused ? (
        <PausedPanel what="terminal" onResume={onResume} />
      ) : (
        <div class="toolbar">
          <button type="button" class="button primary" onClick={create} disabled={!running || busy}>
            <Icon name="terminal" />
            New session
          </button>
          {!running && <span class="muted">The sandbox is {sb.state}: its terminals are closed. Their recordings are in Replay.</span>}
        </div>
      )}
      <ErrorText error={err} />
      {attached && !paused && <Term key={attached} sb={sb} sid={attached} onDetach={() => setAttached(null)} />}
      {sessions && live.length === 0 && !attached && running && (
        <Empty title="No terminal sessions" icon="terminal">
          Start one with New session: a bash shell in the sandbox, recorded for replay.
        </Empty>
      )}
      {live.length > 0 && (
        <div class="table-wrap">
          <table class="table">
            <caption class="table-caption">Sessions</caption>
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Mode</th>
                <th scope="col">State</th>
                <th scope="col">Size</th>
                <th scope="col">Clients</th>
                <th scope="col">Started</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {live.map((s) => (
                <tr key={s.id} class={attached === s.id ? 'selected' : ''}>
                  <td class="mono">{s.id}</td>
                  <td>{s.mode}</td>
                  <td>
                    <Pill value={s.state} />
                  </td>
                  <td class="mono">
                    {s.cols}×{s.rows}
                  </td>
                  <td>{s.attached}</td>
                  <td>{age(s.created_at)} ago</td>
                  <td class="row-actions">
                    <button type="button" class="button small" disabled={attached === s.id || paused} onClick={() => setAttached(s.id)}>
                      Attach
                    </button>
                    <button type="button" class="button small danger-outline" disabled={paused} onClick={() => setEnding(s)}>
                      End
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {ending && (
        <Confirm
          title="End this session?"
          message={<>The shell of <span class="mono">{ending.id}</span> is stopped for every attached client. Its recording stays.</>}
          confirm="End session"
          onClose={() => setEnding(null)}
          onConfirm={async () => {
            await api(sandboxPath(sb.id, '/sessions/' + encodeURIComponent(ending.id)), { method: 'DELETE' });
            if (attached === ending.id) setAttached(null);
            refresh();
          }}
        />
      )}
    </div>
  );
}

// guessSize is the terminal's size before it exists: the panel is about
// as wide as the page.
function guessSize() {
  const w = Math.min(document.querySelector('main')?.clientWidth || 1000, 1600) - 48;
  return { cols: Math.max(40, Math.floor(w / 8.4)), rows: 24 };
}

const theme = {
  background: '#0b0d12',
  foreground: '#e6e8ee',
  cursor: '#e6e8ee',
  selectionBackground: '#3b4a6b',
  black: '#1b1f29', red: '#f4707a', green: '#5fd38d', yellow: '#f2c46d', blue: '#6ea8fe', magenta: '#c792ea', cyan: '#5fd3d3', white: '#d7dae0',
  brightBlack: '#5c6370', brightRed: '#ff8c94', brightGreen: '#7ee2a8', brightYellow: '#ffd98a', brightBlue: '#8fbcff', brightMagenta: '#d9a8f5', brightCyan: '#85e6e6', brightWhite: '#ffffff',
};

function Term({ sb, sid, onDetach }) {
  const el = useRef(null);
  const [status, setStatus] = useState('Connecting…');
  const [err, setErr] = useState(null);
  useEffect(() => {
    const term = new XTerm({
      theme,
      fontFamily: 'ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace',
      fontSize: 13,
      cursorBlink: true,
      scrollback: 5000,
      allowProposedApi: false,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el.current);
    try {
      fit.fit();
    } catch {
      // Not laid out yet; the resize observer fits it.
    }
    term.focus();

    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}${sandboxPath(sb.id, '/sessions/' + encodeURIComponent(sid) + '/attach')}`);
    ws.binaryType = 'arraybuffer';
    const enc = new TextEncoder();
    const sendSize = () => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    };
    let ended = false;
    ws.onopen = () => {
      setStatus('Connected');
      sendSize();
      term.focus();
    };
    ws.onmessage = (m) => {
      if (typeof m.data !== 'string') {
        term.write(new Uint8Array(m.data));
        return;
      }
      let c;
      try {
        c = JSON.parse(m.data);
      } catch {
        return;
      }
      if (c.type === 'exit') {
        ended = true;
        const how = c.signal ? `killed by signal ${c.signal}` : `exited with status ${c.exit_code ?? 0}`;
        term.write(`\r\n\x1b[2m[the shell ${how}]\x1b[0m\r\n`);
        setStatus('The shell ' + how);
      } else if (c.type === 'error') {
        if (c.code !== 'invalid_argument') ended = true;
        setErr(c.code === 'paused' ? pausedMessage('terminal') : c.message);
      }
    };
    ws.onclose = (e) => {
      if (!ended) setStatus(e.code === 1000 ? 'Disconnected' : `Disconnected (${e.code}${e.reason ? ': ' + e.reason : ''})`);
      else setStatus((s) => s);
    };
    ws.onerror = () => setErr('The terminal connection failed.');
    const input = term.onData((d) => ws.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
    const binary = term.onBinary((d) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const u = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) u[i] = d.charCodeAt(i) & 255;
      ws.send(u);
    });
    const resized = term.onResize(sendSize);

    let frame = 0;
    const ro = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        try {
          fit.fit();
        } catch {
          // Hidden: nothing to fit.
        }
      });
    });
    ro.observe(el.current);

    return () => {
      ro.disconnect();
      cancelAnimationFrame(frame);
      input.dispose();
      binary.dispose();
      resized.dispose();
      ws.onclose = null;
      ws.close(1000, 'detached');
      term.dispose();
    };
  }, [sb.id, sid]);

  return (
    <div class="terminal-panel">
      <div class="terminal-head">
        <span class="mono">{sid}</span>
        <span class="muted small" role="status">
          {status}
        </span>
        <button type="button" class="button small ghost-dark" onClick={onDetach}>
          Detach
        </button>
      </div>
      <ErrorText error={err} />
      <div class="terminal" ref={el} />
    </div>
  );
}
