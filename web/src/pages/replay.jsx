// Replays of terminal sessions and commands, built by the server from the
// audit log as asciicast v2 and played with asciinema-player. The cast's
// "m" events mark each command; the buttons below the player jump to them.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as AsciinemaPlayer from 'asciinema-player';
import { api, ndjson, sandboxPath } from '../api.js';
import { Empty, ErrorText, Icon, Loading, usePoll } from '../ui/kit.jsx';
import { clock, dateTime, duration } from '../format.js';

export function Replay({ sb }) {
  const [items, setItems] = useState(null);
  const [err, setErr] = useState(null);
  const [playing, setPlaying] = useState(null);
  usePoll(
    async (signal) => {
      try {
        const text = await api(sandboxPath(sb.id, '/audit'), { query: { type: 'session.created,exec.started' }, text: true, signal });
        const list = [];
        for (const e of ndjson(text)) {
          const d = e.data || {};
          if (e.type === 'session.created') {
            list.push({ key: 's:' + d.session_id, kind: 'Session', title: d.session_id, sub: `${d.mode} ${d.shell}`, time: e.time,
              url: sandboxPath(sb.id, '/sessions/' + encodeURIComponent(d.session_id) + '/cast') });
          } else if (!d.session_id) {
            list.push({ key: 'e:' + d.exec_id, kind: 'Command', title: d.command || (d.argv || []).join(' '), sub: d.exec_id, time: e.time,
              url: sandboxPath(sb.id, '/audit/cast') + '?exec=' + encodeURIComponent(d.exec_id) });
          }
        }
        setItems(list);
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    sb.state === 'running' ? 5000 : 0,
    [sb.id],
  );

  if (items === null) return err ? <ErrorText error={err} /> : <Loading />;
  const whole = { key: 'all', kind: 'Everything', title: 'the whole sandbox', url: sandboxPath(sb.id, '/audit/cast') };
  const current = playing && [whole, ...items].find((i) => i.key === playing);
  return (
    <div class="replay stack-lg">
      <ErrorText error={err} />
      {current && <Player key={current.key} item={current} onClose={() => setPlaying(null)} />}
      {items.length === 0 ? (
        <Empty title="Nothing recorded yet" icon="play">
          Terminal sessions and commands are recorded in the audit log as they run, and can be replayed here.
        </Empty>
      ) : (
        <div class="table-wrap">
          <table class="table">
            <caption class="table-caption">
              {/* A flex box inside the caption: a caption that is a flex box
                  itself stops being the table's caption and shifts the
                  header off its columns. */}
              <div class="caption-row">
                <span>Recordings, oldest first</span>
                <button type="button" class="button small" onClick={() => setPlaying('all')}>
                  Watch everything in order
                </button>
              </div>
            </caption>
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Recording</th>
                <th scope="col">Started</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {items.map((i) => (
                <tr key={i.key} class={playing === i.key ? 'selected' : ''}>
                  <td>
                    <span class={'pill ' + (i.kind === 'Session' ? 'blue' : 'gray')}>{i.kind}</span>
                  </td>
                  <td>
                    <div class="mono clip strong" title={i.title}>{i.title}</div>
                    <div class="muted small mono">{i.sub}</div>
                  </td>
                  <td title={i.time ? dateTime(i.time) : ''}>{i.time ? clock(i.time) : '—'}</td>
                  <td class="row-actions">
                    <button type="button" class="button small" onClick={() => setPlaying(i.key)}>
                      <Icon name="play" size={12} />
                      Play
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

// markersOf reads the marker events of an asciicast v2 file.
function markersOf(cast) {
  const out = [];
  const lines = cast.split('\n');
  for (let i = 1; i < lines.length; i++) {
    if (!lines[i].trim()) continue;
    try {
      const [t, code, label] = JSON.parse(lines[i]);
      if (code === 'm') out.push({ t, label: label || `marker ${out.length + 1}` });
    } catch {
      // A line the player will complain about itself.
    }
  }
  return out;
}

function Player({ item, onClose }) {
  const panel = useRef(null);
  const el = useRef(null);
  const player = useRef(null);
  const [cast, setCast] = useState(null);
  const [err, setErr] = useState(null);
  const [speed, setSpeed] = useState('1');
  const [current, setCurrent] = useState(-1);

  useEffect(() => {
    const ctl = new AbortController();
    api(item.url, { text: true, signal: ctl.signal })
      .then(setCast)
      .catch((e) => e.name !== 'AbortError' && setErr(e));
    return () => ctl.abort();
  }, [item.url]);

  const markers = cast ? markersOf(cast) : [];

  // The player opens above the list: bring it into view (below the sticky
  // header, by the page's scroll-padding) and take the focus, or a Play
  // pressed far down the list would start something nobody sees.
  useEffect(() => {
    const p = panel.current;
    p.scrollIntoView({ block: 'start' });
    p.focus({ preventScroll: true });
  }, []);

  const mount = (startAt, autoPlay) => {
    if (player.current) player.current.dispose();
    el.current.replaceChildren();
    const p = AsciinemaPlayer.create({ data: cast }, el.current, {
      autoPlay,
      startAt,
      speed: Number(speed),
      idleTimeLimit: 2,
      fit: 'width',
      terminalFontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
    });
    p.addEventListener('marker', (m) => setCurrent(m.index));
    player.current = p;
  };

  useEffect(() => {
    if (!cast) return;
    mount(0, true);
    return () => {
      if (player.current) player.current.dispose();
      player.current = null;
    };
  }, [cast]);

  // The player takes its speed when made: make it again where it was.
  useEffect(() => {
    if (!player.current || !cast) return;
    const at = player.current.getCurrentTime() || 0;
    mount(at, true);
  }, [speed]);

  const jump = async (i) => {
    if (!player.current) return;
    await player.current.seek({ marker: i });
    setCurrent(i);
    player.current.play();
  };

  return (
    <div class="panel player-panel" ref={panel} tabIndex={-1} role="region" aria-label={`Replay of ${item.kind.toLowerCase()} ${item.title}`}>
      <div class="panel-head">
        <h2>
          {item.kind}: <span class="mono">{item.title}</span>
        </h2>
        <div class="toolbar tight">
          <div class="field inline">
            <label for="speed">Speed</label>
            <select id="speed" class="input" value={speed} onChange={(e) => setSpeed(e.currentTarget.value)}>
              <option value="0.5">0.5×</option>
              <option value="1">1×</option>
              <option value="2">2×</option>
              <option value="4">4×</option>
              <option value="8">8×</option>
            </select>
          </div>
          <button type="button" class="button small" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
      <ErrorText error={err} />
      {!cast && !err && <Loading label="Loading the recording…" />}
      {cast && markers.length === 0 && <p class="muted small">No command markers in this recording.</p>}
      <div class="player-layout">
        <div class="player" ref={el} />
        {markers.length > 0 && (
          <div class="markers">
            <h3 class="small muted">Commands</h3>
            <ol>
              {markers.map((m, i) => (
                <li key={i}>
                  <button type="button" class={'marker' + (i === current ? ' current' : '')} onClick={() => jump(i)} title={`Jump to ${m.label}`}>
                    <span class="marker-time mono">{duration(m.t)}</span>
                    <span class="mono clip">{m.label}</span>
                  </button>
                </li>
              ))}
            </ol>
          </div>
        )}
      </div>
    </div>
  );
}
