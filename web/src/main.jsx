// The Airlock console: a single-page app over the public API.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, onUnauthorized } from './api.js';
import { navigate, usePath, Link } from './router.jsx';
import { Icon, Loading, Logo } from './ui/kit.jsx';
import { SignIn } from './pages/signin.jsx';
import { Sandboxes } from './pages/sandboxes.jsx';
import { Sandbox } from './pages/sandbox.jsx';
import { Secrets } from './pages/secrets.jsx';
import { Usage } from './pages/usage.jsx';
import { Admin } from './pages/admin.jsx';
// The terminal's and the player's styles load with the app's; their code
// loads when a sandbox's Terminal or Replay tab first opens (sandbox.jsx).
import '@xterm/xterm/css/xterm.css';
import 'asciinema-player/dist/bundle/asciinema-player.css';
import './app.css';

// afterSignIn is where a signed-out visitor was going: kept in memory only,
// so a reload forgets it (nothing goes to browser storage).
let afterSignIn = '/sandboxes';

function App() {
  const path = usePath();
  // undefined: asking the server; null: signed out; else the session.
  const [session, setSession] = useState(undefined);

  useEffect(() => {
    onUnauthorized(() => {
      setSession(null);
      if (location.pathname !== '/signin') {
        afterSignIn = location.pathname;
        navigate('/signin');
      }
    });
    api('/v1/console/session', { quiet401: true })
      .then(setSession)
      .catch(() => setSession(null));
  }, []);

  useEffect(() => {
    if (session === null && path !== '/signin') {
      if (path !== '/') afterSignIn = path;
      navigate('/signin', { replace: true });
    }
    if (session && (path === '/signin' || path === '/')) navigate('/sandboxes', { replace: true });
  }, [session, path]);

  useEffect(() => {
    const title = pageTitle(path);
    document.title = title ? title + ' · Airlock' : 'Airlock';
  }, [path]);

  if (session === undefined) return <Loading label="Loading the console…" />;
  if (!session || path === '/signin') {
    const done = (s) => {
      setSession(s);
      navigate(afterSignIn, { replace: true });
      afterSignIn = '/sandboxes';
    };
    return <SignIn onSignedIn={done} />;
  }

  const signOut = async () => {
    try {
      await api('/v1/console/session', { method: 'DELETE', quiet401: true });
    } catch {
      // Gone already: signed out either way.
    }
    afterSignIn = '/sandboxes';
    setSession(null);
    navigate('/signin');
  };

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <nav class="nav" aria-label="Main">
          <Link href="/sandboxes" class="brand" aria-label="Airlock home">
            <Logo />
            <span>Airlock</span>
          </Link>
          <ul class="nav-links">
            <NavItem href="/sandboxes" path={path} icon="box">Sandboxes</NavItem>
            <NavItem href="/secrets" path={path} icon="lock">Secrets</NavItem>
            <NavItem href="/usage" path={path} icon="chart">Usage</NavItem>
            {session.admin && (
              <NavItem href="/admin" path={path} icon="users">Keys &amp; tenants</NavItem>
            )}
          </ul>
          <div class="nav-user">
            <span class="tenant" title={session.tenant_id}>
              <span class="avatar" aria-hidden="true">{(session.tenant || '?').slice(0, 1).toUpperCase()}</span>
              <span>
                <span class="tenant-name">{session.tenant}</span>
                {session.admin && <span class="tenant-role">admin</span>}
              </span>
            </span>
            <button type="button" class="button ghost" onClick={signOut}>
              <Icon name="logout" />
              Sign out
            </button>
          </div>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} session={session} />
      </main>
    </div>
  );
}

function NavItem({ href, path, icon, children }) {
  const current = path === href || path.startsWith(href + '/');
  return (
    <li>
      <Link href={href} class={current ? 'current' : ''} aria-current={current ? 'page' : undefined}>
        <Icon name={icon} />
        {children}
      </Link>
    </li>
  );
}

function Page({ path, session }) {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'sandboxes':
      if (parts[1]) return <Sandbox key={parts[1]} id={parts[1]} tab={parts[2] || 'overview'} />;
      return <Sandboxes />;
    case 'secrets':
      return <Secrets />;
    case 'usage':
      return <Usage session={session} />;
    case 'admin':
      return <Admin session={session} />;
    default:
      return (
        <div class="page">
          <h1>Page not found</h1>
          <p class="muted">
            There is nothing at {path}. <Link href="/sandboxes">Go to the sandboxes</Link>.
          </p>
        </div>
      );
  }
}

function pageTitle(path) {
  const p = path.split('/').filter(Boolean);
  const names = { sandboxes: 'Sandboxes', secrets: 'Secrets', usage: 'Usage', admin: 'Keys & tenants', signin: 'Sign in' };
  if (p[0] === 'sandboxes' && p[1]) return decodeURIComponent(p[1]);
  return names[p[0]] || '';
}

render(<App />, document.getElementById('app'));
