// The server's templates: base, those built on it, and those imported
// from OCI or Docker images (from "image", with the image and its
// digest). Admins import images here (importimage.jsx); every key can
// list them, as the create form does.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Empty, ErrorText, Loading, usePoll } from '../ui/kit.jsx';
import { age, bytes, dateTime } from '../format.js';
import { shortDigest } from '../images.js';
import { ImportImage } from './importimage.jsx';

export function Templates({ session }) {
  const [list, setList] = useState(null);
  const [err, setErr] = useState(null);
  const refresh = usePoll(
    async (signal) => {
      try {
        const r = await api('/v1/templates', { signal });
        setList(r.templates || []);
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
          <h1>Templates</h1>
          <p class="muted">
            The root file systems sandboxes start from. An imported image's environment and working directory are its sandboxes'
            defaults; its commands run as uid 1000 with the same isolation as on base.
          </p>
        </div>
      </div>
      <div class={session.admin ? 'split' : ''}>
        <div class="split-main">
          <ErrorText error={err} />
          {list === null ? (
            !err && <Loading />
          ) : list.length === 0 ? (
            <Empty title="No templates" icon="layers" />
          ) : (
            <div class="table-wrap">
              <table class="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Source</th>
                    <th scope="col">Digest</th>
                    <th scope="col" class="num">Size</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((t) => (
                    <tr key={t.name}>
                      <td>
                        <span class="mono strong">{t.name}</span>
                        {t.description && <div class="small muted">{t.description}</div>}
                      </td>
                      <td class="small">
                        <Source t={t} />
                      </td>
                      <td class="mono small" title={t.digest || undefined}>{t.digest ? shortDigest(t.digest) : '—'}</td>
                      <td class="num">{t.size_bytes ? bytes(t.size_bytes) : '—'}</td>
                      <td title={t.created_at ? dateTime(t.created_at) : undefined}>{t.created_at ? age(t.created_at) + ' ago' : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {!session.admin && <p class="muted small">Only the server's admin key imports images and builds templates.</p>}
        </div>
        {session.admin && (
          <ImportImage taken={(list || []).map((t) => t.name)} onDone={refresh} />
        )}
      </div>
    </div>
  );
}

// Source says where a template's files came from.
function Source({ t }) {
  if (t.from === 'image') {
    return (
      <>
        image <span class="mono break">{t.image}</span>
      </>
    );
  }
  if (t.from) {
    return (
      <>
        built on <span class="mono">{t.from}</span>
      </>
    );
  }
  return <span class="muted">built in</span>;
}
