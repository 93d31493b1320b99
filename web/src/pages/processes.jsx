// Background processes: the list, the tail of one's output, and kill.
import { useRef, useState } from 'preact/hooks';
import { api, sandboxPath, sse } from '../api.js';
import { Confirm, Empty, ErrorText, Icon, Loading, Pill, usePoll } from '../ui/kit.jsx';
import { age, bytes, duration } from '../format.js';
import { pausedMessage } from '../lifecycle.js';

const TAIL = 64 << 10;

export function Processes({ sb }) {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const [open, setOpen] = useState(null);
  const [killing, setKilling] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        const r = await api(sandboxPath(sb.id, '/processes'), { signal });
        setList(r.processes.slice().sort((a, b) => b.pid - a.pid));
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    2000,
    [sb.id],
  );
  if (list === null) return err ? <ErrorText error={err} /> : <Loading />;
  const shown = open && list.find((p) => p.pid === open);
  const paused = sb.state === 'paused';
  return (
    <div class="stack-lg">
      {paused && (
        <div class="notice paused" role="status">
          <Icon name="pause" />
          <span>{pausedMessage('processes')} They are frozen where they were: their output so far is below, and Kill waits until it resumes.</span>
        </div>
      )}
      <ErrorText error={err} />
      {list.length === 0 ? (
        <Empty title="No background processes" icon="terminal">
          Commands started with <code>background: true</code> (or <code>airlock exec --background</code>) show up here with their
          output.
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col" class="num">PID</th>
                <th scope="col">Tag</th>
                <th scope="col">Command</th>
                <th scope="col">State</th>
                <th scope="col">Started</th>
                <th scope="col" class="num">Output</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {list.map((p) => (
                <tr key={p.pid} class={open === p.pid ? 'selected' : ''}>
                  <td class="num mono">{p.pid}</td>
                  <td class="mono">{p.tag}</td>
                  <td class="mono clip" title={p.command}>{p.command}</td>
                  <td>
                    <Pill value={p.state} />
                    {p.exit && <span class="small muted"> exit {p.exit.signal ? 'signal ' + p.exit.signal : p.exit.exit_code}</span>}
                  </td>
                  <td>{age(p.started_at)} ago</td>
                  <td class="num">{bytes(p.output_bytes)}</td>
                  <td class="row-actions">
                    <button type="button" class="button small" aria-pressed={open === p.pid} onClick={() => setOpen(open === p.pid ? null : p.pid)}>
                      Output
                    </button>
                    <button type="button" class="button small danger-outline" disabled={p.state !== 'running' || paused} onClick={() => setKilling(p)}>
                      Kill
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {shown && <Output sb={sb} p={shown} />}
      {killing && (
        <Confirm
          title={`Kill process ${killing.pid}?`}
          message={<>SIGKILL goes to <span class="mono">{killing.command}</span>; it cannot clean up.</>}
          confirm="Kill process"
          onClose={() => setKilling(null)}
          onConfirm={async () => {
            await api(sandboxPath(sb.id, `/processes/${killing.pid}/signal`), { method: 'POST', json: { signal: 'KILL' } });
            refresh();
          }}
        />
      )}
    </div>
  );
}

// Output shows the last 64 KiB a process printed, read again while it runs.
function Output({ sb, p }) {
  const latest = useRef(p); // the poll below reads the newest output size
  latest.current = p;
  const [text, setText] = useState(null);
  const [note, setNote] = useState('');
  const [err, setErr] = useState(null);
  usePoll(
    async (signal) => {
      try {
        const from = Math.max(0, latest.current.output_bytes - TAIL);
        const raw = await api(sandboxPath(sb.id, `/processes/${p.pid}/output`), { query: { offset: from }, text: true, signal });
        let out = '';
        let end = '';
        for (const ev of sse(raw)) {
          if (ev.event === 'stdout' || ev.event === 'stderr') out += decode(ev.data.data);
          if (ev.event === 'exit') end = `exited ${ev.data.signal ? 'on signal ' + ev.data.signal : 'with status ' + ev.data.exit_code} after ${duration(ev.data.duration_ms / 1000)}`;
          if (ev.event === 'error') setErr(ev.data.message);
        }
        setText(out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''));
        setNote((from > 0 ? `Last ${bytes(TAIL)}` : 'All output') + (end ? ' · ' + end : ' · still running'));
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    p.state === 'running' ? 2000 : 0,
    [sb.id, p.pid, p.state],
  );
  return (
    <div class="panel">
      <div class="panel-head">
        <h2>
          Output of <span class="mono">{p.tag}</span> (PID {p.pid})
        </h2>
        <span class="muted small">{note}</span>
      </div>
      <ErrorText error={err} />
      {text === null ? <Loading /> : <pre class="output" tabIndex={0} aria-label="Process output">{text || '(no output yet)'}</pre>}
    </div>
  );
}

const dec = new TextDecoder();
function decode(b64) {
  const bin = atob(b64);
  const u = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
  return dec.decode(u, { stream: false });
}
