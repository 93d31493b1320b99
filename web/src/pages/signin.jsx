// Sign-in: the key goes to the server once, in exchange for an HttpOnly
// session cookie. It is never written to any storage; the input is emptied
// as soon as the server has answered.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorText, Logo } from '../ui/kit.jsx';

export function SignIn({ onSignedIn }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);

  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    if (!key.trim()) {
      setErr('Enter an API key: it starts with alk_.');
      return;
    }
    setBusy(true);
    try {
      const s = await api('/v1/console/session', { method: 'POST', json: { key: key.trim() }, quiet401: true });
      setKey('');
      onSignedIn(s);
    } catch (x) {
      setKey('');
      setErr(x.status === 401 ? 'That key was not accepted: it is unknown, deleted or mistyped.' : x.message);
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <div class="signin-card">
        <div class="signin-brand">
          <Logo size={40} />
          <h1>Sign in to Airlock</h1>
          <p class="muted">Use an API key of your tenant. It is exchanged for a session cookie and not kept in the browser.</p>
        </div>
        <form onSubmit={submit} class="stack" autocomplete="off">
          <div class="field">
            <label for="api-key">API key</label>
            <input
              id="api-key"
              type="password"
              class="input mono"
              placeholder="alk_…"
              autocomplete="off"
              spellcheck={false}
              autofocus
              value={key}
              onInput={(e) => setKey(e.currentTarget.value)}
            />
          </div>
          <ErrorText error={err} />
          <button type="submit" class="button primary block" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
        <p class="hint center">
          The admin key of a server is in <code>&lt;data-dir&gt;/admin.key</code>.
        </p>
      </div>
    </main>
  );
}
