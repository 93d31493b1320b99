// The file browser: list a directory, walk in and out, upload by dropping
// files or choosing them, download through a plain link, delete.
import { useRef, useState } from 'preact/hooks';
import { api, fileURL, sandboxPath } from '../api.js';
import { Confirm, Dialog, Empty, ErrorText, Field, Icon, Loading, Notice, usePoll } from '../ui/kit.jsx';
import { bytes, dateTime } from '../format.js';
import { explain } from '../lifecycle.js';
import { PausedPanel } from './lifecycle.jsx';

const HOME = '/home/user';

function join(dir, name) {
  return (dir.endsWith('/') ? dir : dir + '/') + name;
}

function parent(dir) {
  const i = dir.replace(/\/+$/, '').lastIndexOf('/');
  return i <= 0 ? '/' : dir.slice(0, i);
}

export function Files({ sb, onResume }) {
  const [dir, setDir] = useState(HOME);
  const [entries, setEntries] = useState(null);
  const [err, setErr] = useState(null);
  const [notice, setNotice] = useState('');
  const [drag, setDrag] = useState(false);
  const [removing, setRemoving] = useState(null);
  const [mkdir, setMkdir] = useState(false);
  const [jump, setJump] = useState(HOME);
  const input = useRef(null);
  const running = sb.state === 'running';

  const refresh = usePoll(
    async (signal) => {
      if (!running) return;
      try {
        const r = await api(sandboxPath(sb.id, '/files'), { query: { path: dir, list: 1 }, signal });
        r.entries.sort((a, b) => (a.type === 'dir') === (b.type === 'dir') ? a.name.localeCompare(b.name) : a.type === 'dir' ? -1 : 1);
        setEntries(r.entries);
        setErr(null);
      } catch (e) {
        if (e.name !== 'AbortError') {
          setErr(explain(e, 'files'));
          setEntries([]);
        }
      }
    },
    0,
    [sb.id, dir, running],
  );

  const go = (d) => {
    setEntries(null);
    setNotice('');
    setDir(d);
    setJump(d);
  };

  const upload = async (files) => {
    const list = Array.from(files || []);
    if (!list.length) return;
    setErr(null);
    setNotice(`Uploading ${list.length} file${list.length > 1 ? 's' : ''}…`);
    let done = 0;
    try {
      for (const f of list) {
        await api(sandboxPath(sb.id, '/files'), { method: 'PUT', query: { path: join(dir, f.name) }, body: f });
        done++;
      }
      setNotice(`Uploaded ${list.map((f) => f.name).join(', ')} to ${dir}.`);
    } catch (e) {
      setNotice(done ? `Uploaded ${done} of ${list.length}.` : '');
      setErr(explain(e, 'files'));
    }
    if (input.current) input.current.value = '';
    refresh();
  };

  if (sb.state === 'paused') return <PausedPanel what="files" onResume={onResume} />;
  if (!running) {
    return (
      <Empty title="The file system is gone" icon="folder">
        The sandbox is {sb.state}. Files written through the API are in the audit log with their size and SHA-256.
      </Empty>
    );
  }

  const crumbs = dir.split('/').filter(Boolean);
  return (
    <div class="stack-lg">
      <div class="toolbar">
        <button type="button" class="button" onClick={() => go(parent(dir))} disabled={dir === '/'} aria-label="Up one directory">
          <Icon name="up" />
          Up
        </button>
        <nav class="path" aria-label="Current directory">
          <button type="button" class="linkish mono" onClick={() => go('/')}>/</button>
          {crumbs.map((c, i) => {
            const to = '/' + crumbs.slice(0, i + 1).join('/');
            return (
              <span key={to}>
                {i > 0 && <span class="sep" aria-hidden="true">/</span>}
                {i === crumbs.length - 1 ? (
                  <span class="mono strong" aria-current="location">{c}</span>
                ) : (
                  <button type="button" class="linkish mono" onClick={() => go(to)}>{c}</button>
                )}
              </span>
            );
          })}
        </nav>
        <form
          class="jump"
          onSubmit={(e) => {
            e.preventDefault();
            if (jump.startsWith('/')) go(jump.replace(/\/+$/, '') || '/');
            else setErr('A path starts with /.');
          }}
        >
          <label class="sr-only" for="jump">Go to directory</label>
          <input id="jump" class="input mono small-input" value={jump} onInput={(e) => setJump(e.currentTarget.value)} />
          <button type="submit" class="button">Go</button>
        </form>
        <button type="button" class="button" onClick={() => setMkdir(true)}>
          <Icon name="plus" />
          New folder
        </button>
        <button type="button" class="button" onClick={refresh} aria-label="Refresh the listing">
          <Icon name="refresh" />
        </button>
      </div>

      <label
        class={'dropzone' + (drag ? ' over' : '')}
        onDragOver={(e) => {
          e.preventDefault();
          setDrag(true);
        }}
        onDragLeave={() => setDrag(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDrag(false);
          upload(e.dataTransfer.files);
        }}
      >
        <Icon name="upload" size={22} />
        <span>
          <strong>Drop files here</strong> or <span class="linkish">choose files</span> to upload to <span class="mono">{dir}</span>
        </span>
        <input ref={input} type="file" multiple class="sr-only" onChange={(e) => upload(e.currentTarget.files)} />
      </label>

      <Notice>{notice}</Notice>
      <ErrorText error={err} />

      {entries === null ? (
        <Loading />
      ) : entries.length === 0 && !err ? (
        <Empty title="This directory is empty" icon="folder">
          Drop files above to upload them here.
        </Empty>
      ) : entries.length ? (
        <div class="table-wrap">
          <table class="table files">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" class="num">Size</th>
                <th scope="col">Mode</th>
                <th scope="col">Modified</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.path}>
                  <td>
                    <span class="name">
                      <Icon name={e.type === 'dir' ? 'folder' : e.type === 'symlink' ? 'link' : 'file'} />
                      {e.type === 'dir' ? (
                        <button type="button" class="linkish mono" onClick={() => go(e.path)}>{e.name}</button>
                      ) : (
                        <span class="mono">{e.name}</span>
                      )}
                    </span>
                  </td>
                  <td class="num">{e.type === 'dir' ? '—' : bytes(e.size)}</td>
                  <td class="mono muted">{e.mode}</td>
                  <td>{dateTime(e.mtime)}</td>
                  <td class="row-actions">
                    {e.type !== 'dir' && (
                      <a class="button small" href={fileURL(sb.id, e.path)} download={e.name}>
                        Download
                      </a>
                    )}
                    <button type="button" class="button small danger-outline" onClick={() => setRemoving(e)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      {removing && (
        <Confirm
          title={removing.type === 'dir' ? 'Delete this folder?' : 'Delete this file?'}
          message={
            <>
              <span class="mono">{removing.path}</span>
              {removing.type === 'dir' ? ' and everything in it will be deleted.' : ' will be deleted.'}
            </>
          }
          confirm={removing.type === 'dir' ? 'Delete folder' : 'Delete file'}
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await api(sandboxPath(sb.id, '/files'), {
              method: 'DELETE',
              query: { path: removing.path, recursive: removing.type === 'dir' ? 1 : undefined },
            });
            setNotice(`Deleted ${removing.path}.`);
            refresh();
          }}
        />
      )}
      {mkdir && <MkdirDialog sb={sb} dir={dir} onClose={() => setMkdir(false)} onDone={(p) => go(p)} />}
    </div>
  );
}

function MkdirDialog({ sb, dir, onClose, onDone }) {
  const [name, setName] = useState('');
  const [err, setErr] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    if (!name.trim() || name.includes('/')) {
      setErr('A folder name without slashes.');
      return;
    }
    try {
      const p = join(dir, name.trim());
      await api(sandboxPath(sb.id, '/files/mkdir'), { method: 'POST', json: { path: p } });
      onClose();
      onDone(p);
    } catch (x) {
      setErr(x);
    }
  };
  return (
    <Dialog title="New folder" onClose={onClose}>
      <form onSubmit={submit} class="stack">
        <Field label="Folder name" hint={'Made in ' + dir}>
          <input class="input mono" value={name} onInput={(e) => setName(e.currentTarget.value)} autofocus />
        </Field>
        <ErrorText error={err} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>Cancel</button>
          <button type="submit" class="button primary">Create folder</button>
        </div>
      </form>
    </Dialog>
  );
}
