// The create form's volumes: rows of (volume, path, read-only), each
// checked as the server will check it (volumes.js). A new row takes a
// volume not yet mounted, at /mnt/<name>.
import { Link } from '../router.jsx';
import { ErrorText, Field, Icon } from '../ui/kit.jsx';
import { bytes } from '../format.js';
import { MAX_MOUNTS } from '../volumes.js';

let rowSeq = 0;

// newMount is a row for the first of volumes not in mounts.
export function newMount(volumes, mounts) {
  const free = volumes.find((v) => !mounts.some((m) => m.name === v.name)) || volumes[0];
  const name = free ? free.name : '';
  return { key: ++rowSeq, name, path: name ? '/mnt/' + name : '', read_only: false };
}

// Mounts edits mounts (the rows) with setMounts; errors is mountErrors's
// answer, shown for the rows whose path was left (touched[key]) or all of
// them once the form was sent (all).
export function Mounts({ volumes, mounts, setMounts, errors, touched, onLeave, all }) {
  const change = (key, k, v) =>
    setMounts((ms) =>
      ms.map((m) => {
        if (m.key !== key) return m;
        const next = { ...m, [k]: v };
        // A path that was the default follows the volume picked.
        if (k === 'name' && m.path === '/mnt/' + m.name) next.path = '/mnt/' + v;
        return next;
      }),
    );
  return (
    <fieldset class="mounts">
      <legend>Volumes</legend>
      {mounts.map((m, i) => (
        <div class="mount-row" role="group" aria-label={`Volume ${i + 1}`} key={m.key}>
          <Field label="Volume">
            <select class="input mono wide-select" value={m.name} onChange={(e) => change(m.key, 'name', e.currentTarget.value)}>
              {volumes.map((v) => (
                <option key={v.name} value={v.name}>
                  {v.name} · {bytes(v.size_mb * 1048576)}{v.node && v.node !== 'local' ? ' · on ' + v.node : ''}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Mounted at" error={touched[m.key] || all ? errors.paths[i] : null}>
            <input
              class="input mono"
              data-field={'mount-' + i}
              value={m.path}
              autocomplete="off"
              spellcheck={false}
              onInput={(e) => change(m.key, 'path', e.currentTarget.value)}
              onBlur={() => onLeave(m.key)}
            />
          </Field>
          <label class="check">
            <input type="checkbox" checked={m.read_only} onChange={(e) => change(m.key, 'read_only', e.currentTarget.checked)} /> Read-only
          </label>
          <button type="button" class="button small ghost" aria-label={`Remove volume ${i + 1}`} onClick={() => setMounts((ms) => ms.filter((x) => x.key !== m.key))}>
            Remove
          </button>
        </div>
      ))}
      {all && <ErrorText error={errors.list} />}
      <div class="mount-foot">
        <button
          type="button"
          class="button small"
          disabled={!volumes.length || mounts.length >= MAX_MOUNTS}
          onClick={() => setMounts((ms) => [...ms, newMount(volumes, ms)])}
        >
          <Icon name="plus" />
          Mount a volume
        </button>
        <span class="hint">
          {volumes.length ? (
            'Kept after the sandbox ends. Read-write by one sandbox at a time; read-only by any number.'
          ) : (
            <>
              You have no volumes: create one under <Link href="/volumes">Volumes</Link>.
            </>
          )}
        </span>
      </div>
    </fieldset>
  );
}
