// Secrets: names and hosts only. A value goes to the server once (create
// or rotate) and is dropped from the page's state as soon as it is sent.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Confirm, Dialog, Empty, ErrorText, Field, Icon, Loading, Notice, usePoll } from '../ui/kit.jsx';
import { dateTime, splitList } from '../format.js';

export function Secrets() {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const [notice, setNotice] = useState('');
  const [rotating, setRotating] = useState(null);
  const [deleting, setDeleting] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        const r = await api('/v1/secrets', { signal });
        setList(r.secrets.slice().sort((a, b) => a.name.localeCompare(b.name)));
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    0,
    [],
  );

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Secrets</h1>
          <p class="muted">
            A sandbox bound to a secret sees only a placeholder; the egress proxy puts the value into requests to the secret's hosts.
            Values are write-only: no page, API or log shows them.
          </p>
        </div>
      </div>
      <Notice>{notice}</Notice>
      <div class="split">
        <div class="split-main">
          <ErrorText error={err} />
          {list === null ? (
            !err && <Loading />
          ) : list.length === 0 ? (
            <Empty title="No secrets yet" icon="lock">
              Create one with the form: a name (the environment variable a sandbox gets), a value and the hosts that may receive it.
            </Empty>
          ) : (
            <div class="table-wrap">
              <table class="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Hosts</th>
                    <th scope="col">Injection</th>
                    <th scope="col">Updated</th>
                    <th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((s) => (
                    <tr key={s.name}>
                      <td class="mono strong">{s.name}</td>
                      <td>
                        <span class="chips">
                          {s.hosts.map((h) => <span class="chip mono" key={h}>{h}</span>)}
                        </span>
                      </td>
                      <td class="small">
                        {s.inject ? (
                          <span class="mono">{s.inject.header}: {s.inject.format || '{value}'}</span>
                        ) : (
                          <span class="muted">placeholder swap</span>
                        )}
                        {s.body && <span class="muted"> · bodies too</span>}
                      </td>
                      <td class="small">{dateTime(s.rotated_at || s.created_at)}{s.rotated_at && <span class="muted"> (rotated)</span>}</td>
                      <td class="row-actions">
                        <button type="button" class="button small" onClick={() => setRotating(s)}>
                          Rotate
                        </button>
                        <button type="button" class="button small danger-outline" onClick={() => setDeleting(s)}>
                          Delete
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
        <NewSecret onDone={(name) => { setNotice(`Secret ${name} created.`); refresh(); }} />
      </div>
      {rotating && <Rotate secret={rotating} onClose={() => setRotating(null)} onDone={() => { setNotice(`Secret ${rotating.name} rotated.`); refresh(); }} />}
      {deleting && (
        <Confirm
          title="Delete this secret?"
          message={<>Sandboxes bound to <span class="mono">{deleting.name}</span> stop getting its value from their next request.</>}
          confirm="Delete secret"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api('/v1/secrets/' + encodeURIComponent(deleting.name), { method: 'DELETE' });
            setNotice(`Secret ${deleting.name} deleted.`);
            refresh();
          }}
        />
      )}
    </div>
  );
}

function NewSecret({ onDone }) {
  const empty = { name: '', value: '', hosts: '', header: '', format: '', body: false };
  const [f, setF] = useState(empty);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const set = (k) => (e) => {
    const t = e.currentTarget;
    setF((o) => ({ ...o, [k]: t.type === 'checkbox' ? t.checked : t.value }));
  };
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const body = { name: f.name.trim(), value: f.value, hosts: splitList(f.hosts) };
    if (f.header.trim()) body.inject = { header: f.header.trim(), ...(f.format ? { format: f.format } : {}) };
    if (f.body) body.body = true;
    setBusy(true);
    try {
      await api('/v1/secrets', { method: 'POST', json: body });
      setF(empty);
      onDone(body.name);
    } catch (x) {
      setF((o) => ({ ...o, value: '' }));
      setErr(x);
    }
    setBusy(false);
  };
  return (
    <form class="panel split-side stack" onSubmit={submit} aria-labelledby="new-secret">
      <h2 id="new-secret">New secret</h2>
      <Field label="Name" hint="An environment variable name: OPENAI_API_KEY.">
        <input class="input mono" value={f.name} onInput={set('name')} autocomplete="off" spellcheck={false} />
      </Field>
      <Field label="Value" hint="Sent once; never shown again.">
        <input class="input mono" type="password" value={f.value} onInput={set('value')} autocomplete="new-password" />
      </Field>
      <Field label="Hosts" hint="Comma separated: api.openai.com, *.example.com:8443.">
        <input class="input mono" value={f.hosts} onInput={set('hosts')} spellcheck={false} />
      </Field>
      <details class="more">
        <summary>Header injection (optional)</summary>
        <Field label="Header" hint="Set when a request lacks it, e.g. Authorization.">
          <input class="input mono" value={f.header} onInput={set('header')} />
        </Field>
        <Field label="Format" hint="{value} stands for the secret, e.g. Bearer {value}.">
          <input class="input mono" value={f.format} onInput={set('format')} placeholder="{value}" />
        </Field>
        <label class="check">
          <input type="checkbox" checked={f.body} onChange={set('body')} /> Replace the placeholder in request bodies too
        </label>
      </details>
      <ErrorText error={err} />
      <button type="submit" class="button primary" disabled={busy}>
        <Icon name="plus" />
        Create secret
      </button>
    </form>
  );
}

function Rotate({ secret, onClose, onDone }) {
  const [value, setValue] = useState('');
  const [hosts, setHosts] = useState(secret.hosts.join(', '));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    try {
      await api('/v1/secrets/' + encodeURIComponent(secret.name), {
        method: 'PUT',
        json: { value, hosts: splitList(hosts), ...(secret.inject ? { inject: secret.inject } : {}), body: secret.body },
      });
      setValue('');
      onDone();
      onClose();
    } catch (x) {
      setValue('');
      setErr(x);
      setBusy(false);
    }
  };
  return (
    <Dialog title={`Rotate ${secret.name}`} onClose={onClose}>
      <form class="stack" onSubmit={submit}>
        <p class="muted">Bound sandboxes use the new value from their next request; the old one stays scrubbed from the logs.</p>
        <Field label="New value">
          <input class="input mono" type="password" value={value} onInput={(e) => setValue(e.currentTarget.value)} autocomplete="new-password" autofocus />
        </Field>
        <Field label="Allowed to receive it" hint="Hosts, comma separated.">
          <input class="input mono" value={hosts} onInput={(e) => setHosts(e.currentTarget.value)} />
        </Field>
        <ErrorText error={err} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="button primary" disabled={busy || !value}>Rotate secret</button>
        </div>
      </form>
    </Dialog>
  );
}
