// The tenant's snapshots: a sandbox's files saved at one instant, to
// start new sandboxes from. Each is kept on the node that took it and
// counted in the tenant's storage until deleted. ?name= picks one out (a
// sandbox page's "From snapshot" link).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, useQuery } from '../router.jsx';
import { Confirm, Empty, ErrorText, Loading, usePoll } from '../ui/kit.jsx';
import { age, bytes, dateTime } from '../format.js';
import { NewSandbox } from './newsandbox.jsx';

export function Snapshots() {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const [deleting, setDeleting] = useState(null);
  const [starting, setStarting] = useState(null);
  const [query] = useQuery();
  const picked = query.get('name') || '';
  const refresh = usePoll(
    async (signal) => {
      try {
        const r = await api('/v1/snapshots', { signal });
        setList(r.snapshots.slice().sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at)));
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') setErr(e);
      }
    },
    10000,
    [],
  );

  const found = list && picked && list.some((s) => s.name === picked);
  useEffect(() => {
    if (found) document.getElementById('snapshot-' + picked)?.scrollIntoView({ block: 'nearest' });
  }, [found, picked]);

  const total = (list || []).reduce((n, s) => n + (s.size_bytes || 0), 0);
  return (
    <div class="page">
      <div class="page-head">
        <div>
          <h1>Snapshots</h1>
          <p class="muted">
            A sandbox's files saved at one instant (take one with Snapshot on its page), to start new sandboxes from. Processes
            and memory are not in them. They count in your storage until deleted; a sandbox made from one keeps its copy.
          </p>
        </div>
      </div>
      <ErrorText error={err} />
      {picked && list && !found && (
        <ErrorText error={`There is no snapshot ${picked} any more: it has been deleted.`} />
      )}
      {list === null ? (
        !err && <Loading />
      ) : list.length === 0 ? (
        <Empty title="No snapshots yet" icon="camera">
          Open a running or paused sandbox and choose Snapshot: its files are saved under a name, and any number of sandboxes
          can start from them.
        </Empty>
      ) : (
        <>
          <div class="toolbar">
            <span class="muted small">
              {list.length} snapshot{list.length === 1 ? '' : 's'} · {bytes(total)} in all
            </span>
          </div>
          <div class="table-wrap">
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Sandbox</th>
                  <th scope="col">Template</th>
                  <th scope="col">Node</th>
                  <th scope="col" class="num">Size</th>
                  <th scope="col">Created</th>
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                {list.map((s) => (
                  <tr key={s.name} id={'snapshot-' + s.name} class={s.name === picked ? 'selected' : ''}
                    aria-current={s.name === picked ? 'true' : undefined}>
                    <td class="mono strong">{s.name}</td>
                    <td>
                      <Link href={'/sandboxes/' + encodeURIComponent(s.sandbox)} class="mono">
                        {s.sandbox}
                      </Link>
                    </td>
                    <td class="mono">{s.template}</td>
                    <td class="mono">{s.node || '—'}</td>
                    <td class="num">{bytes(s.size_bytes)}</td>
                    <td title={dateTime(s.created_at)}>{age(s.created_at)} ago</td>
                    <td class="row-actions">
                      <button type="button" class="button small" aria-label={'New sandbox from ' + s.name} onClick={() => setStarting(s)}>
                        New sandbox
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
        </>
      )}
      {starting && <NewSandbox snapshot={starting} onClose={() => setStarting(null)} />}
      {deleting && (
        <Confirm
          title="Delete snapshot?"
          message={
            <>
              <span class="mono">{deleting.name}</span> ({bytes(deleting.size_bytes)}) is deleted from{' '}
              <span class="mono">{deleting.node || 'its node'}</span>. Sandboxes made from it keep their copy.
            </>
          }
          confirm="Delete snapshot"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api('/v1/snapshots/' + encodeURIComponent(deleting.name), { method: 'DELETE' });
            refresh();
          }}
        />
      )}
    </div>
  );
}
