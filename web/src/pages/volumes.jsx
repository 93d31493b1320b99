// The tenant's volumes: directories with a disk limit of their own that
// outlive the sandboxes that mount them (the create form's Volumes). Each
// lives on one node and counts in the tenant's storage until deleted; the
// server refuses to delete one a sandbox mounts, naming the sandboxes.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link } from '../router.jsx';
import { Confirm, Empty, ErrorText, Field, Icon, Loading, Notice, usePoll } from '../ui/kit.jsx';
import { age, bytes, dateTime } from '../format.js';
import { mountedBy, volumeNameError, volumeSizeError } from '../volumes.js';

const LIVE = ['running', 'paused', 'creating'];

export function Volumes() {
  const [list, setList] = useState(null);
  const [mounts, setMounts] = useState([]); // live sandboxes, for "Mounted by"
  const [err, setErr] = useState(null);
  const [notice, setNotice] = useState('');
  const [deleting, setDeleting] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        const [v, ...live] = await Promise.all([
          api('/v1/volumes', { signal }),
          ...LIVE.map((state) => api('/v1/sandboxes', { query: { state, limit: 1000 }, signal })),
        ]);
        setList(v.volumes.slice().sort((a, b) => a.name.localeCompare(b.name)));
        setMounts(live.flatMap((p) => p.sandboxes));
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    10000,
    [],
  );

  const total = (list || []).reduce((n, v) => n + v.size_mb, 0);
  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Volumes</h1>
          <p class="muted">
            Directories with a disk limit of their own that outlive your sandboxes: mount one when you create a sandbox (read-write
            by one sandbox at a time, read-only by any number). Their size counts in your storage until deleted.
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
            <Empty title="No volumes yet" icon="disk">
              Create one with the form, then pick it under Volumes in the New sandbox form: what a sandbox writes there is kept
              after it ends.
            </Empty>
          ) : (
            <>
              <div class="toolbar">
                <span class="muted small">
                  {list.length} volume{list.length === 1 ? '' : 's'} · {bytes(total * 1048576)} in all
                </span>
              </div>
              <div class="table-wrap">
                <table class="table">
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col" class="num">Size</th>
                      <th scope="col">Node</th>
                      <th scope="col">Created</th>
                      <th scope="col">Mounted by</th>
                      <th scope="col"><span class="sr-only">Actions</span></th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((v) => (
                      <tr key={v.name}>
                        <td class="mono strong">{v.name}</td>
                        <td class="num">{bytes(v.size_mb * 1048576)}</td>
                        <td class="mono">{v.node || '—'}</td>
                        <td title={dateTime(v.created_at)}>{age(v.created_at)} ago</td>
                        <td>
                          <MountedBy ids={mountedBy(mounts, v.name)} />
                        </td>
                        <td class="row-actions">
                          <button type="button" class="button small danger-outline" aria-label={'Delete ' + v.name} onClick={() => setDeleting(v)}>
                            Delete
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </div>
        <NewVolume onDone={(v) => { setNotice(`Volume ${v.name} created on ${v.node}.`); refresh(); }} />
      </div>
      {deleting && (
        <Confirm
          title="Delete volume?"
          message={
            <>
              <span class="mono">{deleting.name}</span> and everything in it ({bytes(deleting.size_mb * 1048576)} on{' '}
              <span class="mono">{deleting.node}</span>) are deleted for good. The server refuses while a sandbox mounts it.
            </>
          }
          confirm="Delete volume"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api('/v1/volumes/' + encodeURIComponent(deleting.name), { method: 'DELETE' });
            setNotice(`Volume ${deleting.name} deleted.`);
            refresh();
          }}
        />
      )}
    </div>
  );
}

function MountedBy({ ids }) {
  if (!ids.length) return <span class="muted">—</span>;
  return (
    <span class="chips">
      {ids.map((id) => (
        <Link key={id} href={'/sandboxes/' + encodeURIComponent(id)} class="chip mono">
          {id}
        </Link>
      ))}
    </span>
  );
}

function NewVolume({ onDone }) {
  const empty = { name: '', size: '1024', node: '' };
  const [f, setF] = useState(empty);
  const [touched, setTouched] = useState({});
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const errors = { name: volumeNameError(f.name), size: volumeSizeError(f.size) };
  const shown = (k) => (touched[k] ? errors[k] : null);
  const set = (k) => (e) => {
    const v = e.currentTarget.value;
    setF((o) => ({ ...o, [k]: v }));
  };
  const leave = (k) => () => setTouched((t) => ({ ...t, [k]: true }));
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const bad = Object.keys(errors).find((k) => errors[k]);
    if (bad) {
      setTouched({ name: true, size: true });
      e.currentTarget.querySelector(`[data-field="${bad}"]`)?.focus();
      return;
    }
    setBusy(true);
    try {
      const v = await api('/v1/volumes', {
        method: 'POST',
        json: { name: f.name.trim(), size_mb: Number(f.size), node: f.node.trim() || undefined },
      });
      setF(empty);
      setTouched({});
      onDone(v);
    } catch (x) {
      setErr(x);
    }
    setBusy(false);
  };
  return (
    <form class="panel split-side stack" onSubmit={submit} aria-labelledby="new-volume">
      <h2 id="new-volume">New volume</h2>
      <Field label="Name" hint="Letters, digits, '.', '_' and '-': data, cache-1." error={shown('name')}>
        <input class="input mono" data-field="name" value={f.name} onInput={set('name')} onBlur={leave('name')} autocomplete="off" spellcheck={false} />
      </Field>
      <Field label="Size (MiB)" hint="Its disk limit: 16 MiB to 1 TiB." error={shown('size')}>
        <input class="input" data-field="size" type="number" min="16" step="1" value={f.size} onInput={set('size')} onBlur={leave('size')} />
      </Field>
      <Field label="Node" hint="Optional: the node to keep it on; empty is the server's own host. Sandboxes that mount it run there.">
        <input class="input mono" value={f.node} onInput={set('node')} autocomplete="off" spellcheck={false} />
      </Field>
      <ErrorText error={err} />
      <button type="submit" class="button primary" disabled={busy}>
        <Icon name="plus" />
        {busy ? 'Creating…' : 'Create volume'}
      </button>
    </form>
  );
}
