// Import image: a template from an OCI or Docker image, pulled from a
// registry (through the egress proxy's checks) or uploaded as a `docker
// save` / OCI layout tarball. The server streams each layer's progress as
// server-sent events (images.js reads them as they arrive), then the
// template or an error; the layers stay shown after it ends.
import { useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorText, Field, Icon, Notice } from '../ui/kit.jsx';
import { bytes, splitList } from '../format.js';
import { imageRefError, importEnd, importStart, importStep, layerFraction, layerText, readEvents, shortDigest, templateNameError } from '../images.js';

const empty = { name: '', description: '', image: '', credentials: '', allow: '', insecure: false };

export function ImportImage({ taken, onDone }) {
  const [mode, setMode] = useState('image'); // or 'file'
  const [f, setF] = useState(empty);
  const [file, setFile] = useState(null);
  const [fileKey, setFileKey] = useState(0); // a new one empties the file input
  const [touched, setTouched] = useState({});
  // run: {phase: 'sending' | 'importing' | 'ended', st (images.js), file}.
  const [run, setRun] = useState(null);
  const ctl = useRef(null);
  const errors = {
    name: templateNameError(f.name, taken),
    image: mode === 'image' ? imageRefError(f.image) : null,
    file: mode === 'file' && !file ? 'Pick the .tar file docker save (or an OCI layout) wrote' : null,
  };
  const shown = (k) => (touched[k] ? errors[k] : null);
  const leave = (k) => () => setTouched((t) => ({ ...t, [k]: true }));
  const set = (k) => (e) => {
    const t = e.currentTarget;
    setF((o) => ({ ...o, [k]: t.type === 'checkbox' ? t.checked : t.value }));
  };
  const busy = run && run.phase !== 'ended';

  const request = (signal) => {
    const name = f.name.trim();
    const opts = { raw: true, signal, headers: { Accept: 'text/event-stream' } };
    if (mode === 'file') {
      return api('/v1/templates/' + encodeURIComponent(name) + '/image', {
        ...opts, method: 'PUT', body: file, query: { description: f.description.trim(), filename: file.name },
        headers: { ...opts.headers, 'Content-Type': 'application/x-tar' },
      });
    }
    const allow = splitList(f.allow);
    return api('/v1/templates', {
      ...opts, method: 'POST',
      json: {
        name, image: f.image.trim(), description: f.description.trim() || undefined, credentials: f.credentials.trim() || undefined,
        allow: allow.length ? allow : undefined, insecure: f.insecure || undefined,
      },
    });
  };

  const submit = async (e) => {
    e.preventDefault();
    const bad = Object.keys(errors).find((k) => errors[k]);
    if (bad) {
      setTouched({ name: true, image: true, file: true });
      e.currentTarget.querySelector(`[data-field="${bad}"]`)?.focus();
      return;
    }
    ctl.current = new AbortController();
    let st = importStart;
    const show = (phase) => setRun({ phase, st, file: mode === 'file' ? file : null });
    show(mode === 'file' ? 'sending' : 'importing');
    try {
      const res = await request(ctl.current.signal);
      if ((res.headers.get('Content-Type') || '').includes('text/event-stream')) {
        show('importing');
        await readEvents(res.body, (ev) => {
          st = importStep(st, ev);
          show('importing');
        });
      } else {
        st = { ...st, template: await res.json() }; // a server that answered without streaming
      }
      st = importEnd(st);
    } catch (x) {
      st = { ...st, error: x.name === 'AbortError' ? 'Stopped: the server drops what it had read of the image.' : x.message };
    }
    ctl.current = null;
    show('ended');
    if (st.template) {
      setF(empty);
      setFile(null);
      setTouched({});
      setFileKey((k) => k + 1);
      onDone(st.template);
    }
  };

  return (
    <form class="panel split-side stack" onSubmit={submit} aria-labelledby="import-image">
      <h2 id="import-image">Import image</h2>
      <fieldset class="segmented" disabled={busy}>
        <legend class="sr-only">Import from</legend>
        {[['image', 'From a registry'], ['file', 'Upload a file']].map(([k, label]) => (
          <label key={k} class={mode === k ? 'current' : ''}>
            <input type="radio" name="import-from" value={k} checked={mode === k} onChange={() => setMode(k)} />
            {label}
          </label>
        ))}
      </fieldset>
      <Field label="Template name" hint="Lower-case letters, digits and '-': what sandboxes name as their template." error={shown('name')}>
        <input class="input mono" data-field="name" value={f.name} onInput={set('name')} onBlur={leave('name')} autocomplete="off" spellcheck={false} disabled={busy} />
      </Field>
      {mode === 'image' ? (
        <>
          <Field label="Image" hint="registry/repo:tag or @sha256:…; Docker Hub when no registry is named." error={shown('image')}>
            <input class="input mono" data-field="image" value={f.image} onInput={set('image')} onBlur={leave('image')} placeholder="ghcr.io/team/app:1.2" autocomplete="off" spellcheck={false} disabled={busy} />
          </Field>
          <details class="more">
            <summary>Private registry</summary>
            <Field label="Credentials secret" hint="The name of your secret holding user:password or a token; its hosts must include the registry's.">
              <input class="input mono" value={f.credentials} onInput={set('credentials')} autocomplete="off" spellcheck={false} disabled={busy} />
            </Field>
            <Field label="Also allow hosts" hint="Hosts the pull may reach besides the registry (an auth server, a blob CDN), comma separated.">
              <input class="input mono" value={f.allow} onInput={set('allow')} autocomplete="off" spellcheck={false} disabled={busy} />
            </Field>
            <label class="check">
              <input type="checkbox" checked={f.insecure} onChange={set('insecure')} disabled={busy} /> Plain HTTP (a registry on a private network)
            </label>
          </details>
        </>
      ) : (
        <Field label="Tarball" hint="What docker save writes, or an OCI layout, as a .tar file." error={shown('file')}>
          <input key={fileKey} class="input" data-field="file" type="file" accept=".tar,application/x-tar" disabled={busy}
            onChange={(e) => { setFile(e.currentTarget.files[0] || null); setTouched((t) => ({ ...t, file: true })); }} />
        </Field>
      )}
      <Field label="Description" hint="Optional: shown in the template lists.">
        <input class="input" value={f.description} onInput={set('description')} disabled={busy} />
      </Field>
      {run && <Progress run={run} />}
      <div class="actions">
        {busy && (
          <button type="button" class="button" onClick={() => ctl.current?.abort()}>
            Stop
          </button>
        )}
        <button type="submit" class="button primary" disabled={busy}>
          <Icon name={mode === 'file' ? 'upload' : 'layers'} />
          {busy ? 'Importing…' : 'Import image'}
        </button>
      </div>
    </form>
  );
}

// Progress is an import's layers, each with its bar, then how it ended.
function Progress({ run }) {
  const { st, phase, file } = run;
  const layers = st.layers.filter(Boolean);
  return (
    <div class="import-progress">
      {phase === 'sending' && (
        <p class="muted small">
          <span class="spinner" aria-hidden="true" /> Sending <span class="mono">{file.name}</span> ({bytes(file.size)}) to the server…
        </p>
      )}
      {phase === 'importing' && !layers.length && (
        <p class="muted small">
          <span class="spinner" aria-hidden="true" /> Reading the image…
        </p>
      )}
      {layers.length > 0 && (
        <ol class="layers" aria-label="Layers">
          {layers.map((l) => {
            const t = layerText(l);
            const v = layerFraction(l);
            return (
              <li key={l.layer} class={l.done ? 'done' : ''}>
                <div class="layer-line">
                  <span class="strong">{t.name}</span>
                  <span class="mono muted" title={l.digest}>{shortDigest(l.digest)}</span>
                  <span class="layer-read">{t.read}</span>
                </div>
                {v === null ? (
                  <progress key="unknown" aria-label={`Layer ${l.layer} of ${l.of}`} />
                ) : (
                  <progress key="known" max="1" value={v} aria-label={`Layer ${l.layer} of ${l.of}`} />
                )}
              </li>
            );
          })}
        </ol>
      )}
      {st.template && (
        <Notice>
          Template <span class="mono">{st.template.name}</span> imported
          {st.template.digest ? <> ({shortDigest(st.template.digest)})</> : null}: {bytes(st.template.size_bytes)}.
        </Notice>
      )}
      <ErrorText error={st.error} />
    </div>
  );
}
