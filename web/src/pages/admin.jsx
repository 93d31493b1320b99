// Tenants and keys, for the admin key's session. A new key is shown once,
// in a dialog, and forgotten when the dialog closes.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Confirm, Dialog, Empty, ErrorText, Field, Icon, Loading, Notice, Pill, copy, usePoll } from '../ui/kit.jsx';
import { dateTime } from '../format.js';

export function Admin({ session }) {
  const [tenants, setTenants] = useState(null);
  const [keys, setKeys] = useState(null);
  const [err, setErr] = useState(null);
  const [notice, setNotice] = useState('');
  const [newKey, setNewKey] = useState(null);
  const [deleting, setDeleting] = useState(null);
  const [lastTenant, setLastTenant] = useState('');
  const refresh = usePoll(
    async (signal) => {
      if (!session.admin) return;
      try {
        const [t, k] = await Promise.all([api('/v1/tenants', { signal }), api('/v1/keys', { signal })]);
        setTenants(t.tenants);
        setKeys(k.keys);
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    0,
    [],
  );

  if (!session.admin) {
    return (
      <div class="page">
        <h1>Keys &amp; tenants</h1>
        <Empty title="Admins only" icon="users">Sign in with the server's admin key to manage tenants and keys.</Empty>
      </div>
    );
  }

  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Keys &amp; tenants</h1>
          <p class="muted">A tenant owns sandboxes, secrets and usage; its keys act for it. Keys made here are never admin keys.</p>
        </div>
      </div>
      <Notice>{notice}</Notice>
      <ErrorText error={err} />
      {tenants === null ? (
        !err && <Loading />
      ) : (
        <div class="stack-lg">
          <section class="split" aria-labelledby="tenants-h">
            <div class="split-main">
              <h2 id="tenants-h">Tenants</h2>
              {tenants.length === 0 ? (
                <Empty title="No tenants" icon="users" />
              ) : (
                <div class="table-wrap">
                  <table class="table">
                    <thead>
                      <tr>
                        <th scope="col">Tenant</th>
                        <th scope="col">ID</th>
                        <th scope="col" class="num">Max sandboxes</th>
                        <th scope="col" class="num">Max memory</th>
                        <th scope="col" class="num">Keys</th>
                        <th scope="col">Created</th>
                      </tr>
                    </thead>
                    <tbody>
                      {tenants.map((t) => (
                        <tr key={t.id}>
                          <td class="strong">{t.name}</td>
                          <td class="mono small muted">{t.id}</td>
                          <td class="num">{t.max_sandboxes || 'unlimited'}</td>
                          <td class="num">{t.max_memory_mb ? t.max_memory_mb + ' MiB' : 'unlimited'}</td>
                          <td class="num">{keys.filter((k) => k.tenant === t.name).length}</td>
                          <td class="small">{dateTime(t.created_at)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </div>
            <NewTenant onDone={(name) => { setNotice(`Tenant ${name} created: make it a key below.`); setLastTenant(name); refresh(); }} />
          </section>

          <section class="split" aria-labelledby="keys-h">
            <div class="split-main">
              <h2 id="keys-h">API keys</h2>
              <div class="table-wrap">
                <table class="table">
                  <thead>
                    <tr>
                      <th scope="col">Key</th>
                      <th scope="col">Name</th>
                      <th scope="col">Tenant</th>
                      <th scope="col">Role</th>
                      <th scope="col">Created</th>
                      <th scope="col"><span class="sr-only">Actions</span></th>
                    </tr>
                  </thead>
                  <tbody>
                    {keys.map((k) => (
                      <tr key={k.id}>
                        <td class="mono">{k.id}</td>
                        <td>{k.name || <span class="muted">—</span>}</td>
                        <td>{k.tenant}</td>
                        <td>{k.admin ? <Pill value="admin" kind="blue" /> : <span class="muted small">tenant</span>}</td>
                        <td class="small">{dateTime(k.created_at)}</td>
                        <td class="row-actions">
                          {k.id === session.key_id ? (
                            <span class="muted small">this session</span>
                          ) : (
                            <button type="button" class="button small danger-outline" onClick={() => setDeleting(k)}>
                              Delete
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </div>
            <NewKey key={lastTenant} initial={lastTenant} tenants={tenants} onDone={(k) => { setNewKey(k); refresh(); }} />
          </section>
        </div>
      )}
      {newKey && <ShowKey k={newKey} onClose={() => setNewKey(null)} />}
      {deleting && (
        <Confirm
          title="Delete this key?"
          message={<>Programs using <span class="mono">{deleting.id}</span>{deleting.name ? ` (${deleting.name})` : ''} get 401 from now on.</>}
          confirm="Delete key"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api('/v1/keys/' + encodeURIComponent(deleting.id), { method: 'DELETE' });
            setNotice(`Key ${deleting.id} deleted.`);
            refresh();
          }}
        />
      )}
    </div>
  );
}

function NewTenant({ onDone }) {
  const [f, setF] = useState({ name: '', max: '', mem: '' });
  const [err, setErr] = useState(null);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    try {
      await api('/v1/tenants', {
        method: 'POST',
        json: { name: f.name.trim(), max_sandboxes: Number(f.max) || 0, max_memory_mb: Number(f.mem) || 0 },
      });
      onDone(f.name.trim());
      setF({ name: '', max: '', mem: '' });
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <form class="panel split-side stack" onSubmit={submit} aria-labelledby="new-tenant">
      <h3 id="new-tenant">New tenant</h3>
      <Field label="Tenant name">
        <input class="input" value={f.name} onInput={set('name')} placeholder="team-a" />
      </Field>
      <div class="row2">
        <Field label="Max sandboxes" hint="Empty: unlimited.">
          <input class="input" type="number" min="0" value={f.max} onInput={set('max')} />
        </Field>
        <Field label="Max memory (MiB)" hint="Empty: unlimited.">
          <input class="input" type="number" min="0" value={f.mem} onInput={set('mem')} />
        </Field>
      </div>
      <ErrorText error={err} />
      <button type="submit" class="button primary">
        <Icon name="plus" />
        Create tenant
      </button>
    </form>
  );
}

function NewKey({ tenants, initial, onDone }) {
  const [tenant, setTenant] = useState(initial || '');
  const [name, setName] = useState('');
  const [err, setErr] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    try {
      const k = await api('/v1/keys', { method: 'POST', json: { tenant: tenant || (tenants[0] && tenants[0].name), name: name.trim() || undefined } });
      setName('');
      onDone(k);
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <form class="panel split-side stack" onSubmit={submit} aria-labelledby="new-key">
      <h3 id="new-key">New key</h3>
      <Field label="For tenant">
        <select class="input" value={tenant || (tenants[0] && tenants[0].name)} onChange={(e) => setTenant(e.currentTarget.value)}>
          {tenants.map((t) => (
            <option key={t.id} value={t.name}>{t.name}</option>
          ))}
        </select>
      </Field>
      <Field label="Key name" hint="Optional: what uses it, e.g. ci.">
        <input class="input" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <ErrorText error={err} />
      <button type="submit" class="button primary" disabled={!tenants.length}>
        <Icon name="key" />
        Create key
      </button>
    </form>
  );
}

function ShowKey({ k, onClose }) {
  const [copied, setCopied] = useState('');
  return (
    <Dialog title="Your new API key" onClose={onClose}>
      <div class="stack">
        <p class="muted">
          For tenant <strong>{k.tenant}</strong>{k.name ? <> ({k.name})</> : null}. Copy it now: it is shown only once and cannot be read
          again.
        </p>
        <div class="keybox">
          <code class="mono" id="new-key-value">{k.key}</code>
          <button type="button" class="button small" onClick={async () => setCopied((await copy(k.key)) ? 'Copied to the clipboard.' : 'Copy failed: select the key and copy it.')}>
            Copy
          </button>
        </div>
        <Notice>{copied}</Notice>
        <div class="actions">
          <button type="button" class="button primary" onClick={onClose}>
            Done
          </button>
        </div>
      </div>
    </Dialog>
  );
}
