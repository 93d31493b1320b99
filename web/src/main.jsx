// The Airlock console: a single-page app over the public API.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, onUnauthorized } from './api.js';
import { navigate, usePath, Link } from './router.jsx';
import { Empty, Icon, Loading, Logo } from './ui/kit.jsx';
import { SignIn } from './pages/signin.jsx';
import { Sandboxes } from './pages/sandboxes.jsx';
import { Sandbox, TABS } from './pages/sandbox.jsx';
import { Snapshots } from './pages/snapshots.jsx';
import { Volumes } from './pages/volumes.jsx';
import { Templates } from './pages/templates.jsx';
import { Secrets } from './pages/secrets.jsx';
import { Usage } from './pages/usage.jsx';
import { Admin } from './pages/admin.jsx';
import { Approvals } from './pages/approvals.jsx';
import { usePending } from './pending.js';
import { badgeText } from './approvals.js';
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
    if (session === null && path !== '/signin' && known(path)) {
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
  if (!session && !known(path)) {
    return (
      <main id="main" class="signin">
        <NotFound path={path} home="/signin" homeLabel="Sign in" />
      </main>
    );
  }
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
      <Topbar>
        <nav class="nav" aria-label="Main">
          <Link href="/sandboxes" class="brand" aria-label="Airlock home">
            <Logo />
            <span>Airlock</span>
          </Link>
          <ul class="nav-links">
            <NavItem href="/sandboxes" path={path} icon="box">Sandboxes</NavItem>
            <ApprovalsNavItem path={path} />
            <NavItem href="/snapshots" path={path} icon="camera">Snapshots</NavItem>
            <NavItem href="/volumes" path={path} icon="disk">Volumes</NavItem>
            {session.admin && (
              <NavItem href="/templates" path={path} icon="layers">Templates</NavItem>
            )}
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
      </Topbar>
      <main id="main" tabIndex={-1}>
        <Page path={path} session={session} />
      </main>
    </div>
  );
}

function NavItem({ href, path, icon, children, badge, label }) {
  const current = path === href || path.startsWith(href + '/');
  return (
    <li>
      <Link href={href} class={current ? 'current' : ''} aria-current={current ? 'page' : undefined} aria-label={label}>
        <Icon name={icon} />
        {children}
        {badge}
      </Link>
    </li>
  );
}

// ApprovalsNavItem carries the header's badge: how many approvals wait
// for a decision, on every page, while any does (pending.js keeps it
// live). The link's name says the count in words.
function ApprovalsNavItem({ path }) {
  const { list } = usePending();
  const n = list ? list.length : 0;
  return (
    <NavItem
      href="/approvals"
      path={path}
      icon="bell"
      label={n ? `Approvals, ${n} pending` : undefined}
      badge={n > 0 && <span class="nav-badge" aria-hidden="true">{badgeText(n)}</span>}
    >
      Approvals
    </NavItem>
  );
}

// Topbar is the sticky header. Its height (one row, or two on a narrow
// screen) goes to --topbar-h, which the page's scroll-padding keeps clear,
// so nothing scrolled into view or focused ends up behind it.
function Topbar({ children }) {
  const ref = useRef(null);
  useEffect(() => {
    const root = document.documentElement;
    const ro = new ResizeObserver(() => root.style.setProperty('--topbar-h', ref.current.offsetHeight + 'px'));
    ro.observe(ref.current);
    return () => ro.disconnect();
  }, []);
  return (
    <header class="topbar" ref={ref}>
      {children}
    </header>
  );
}

// known reports whether path is one of the console's pages; any other
// gets the not-found page, signed in or not.
function known(path) {
  const p = path.split('/').filter(Boolean);
  try {
    p.forEach((x) => decodeURIComponent(x));
  } catch {
    return false; // a malformed escape (%E0) names nothing
  }
  switch (p[0]) {
    case undefined:
      return true;
    case 'sandboxes':
      return p.length <= 2 || (p.length === 3 && TABS.some((t) => t[0] === p[2]));
    case 'signin':
    case 'snapshots':
    case 'volumes':
    case 'templates':
    case 'secrets':
    case 'usage':
    case 'admin':
    case 'approvals':
      return p.length === 1;
  }
  return false;
}

function NotFound({ path, home = '/sandboxes', homeLabel = 'Go to the sandboxes' }) {
  return (
    <div class="page not-found">
      <h1>Nothing here</h1>
      <Empty title="The console has no such page" icon="alert">
        <p>
          There is nothing at <span class="mono break">{path}</span>: the link may be old, or mistyped.
        </p>
        <Link href={home} class="button">
          {homeLabel}
        </Link>
      </Empty>
    </div>
  );
}

function Page({ path, session }) {
  if (!known(path)) return <NotFound path={path} />;
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case 'sandboxes':
      if (parts[1]) return <Sandbox key={parts[1]} id={parts[1]} tab={parts[2] || 'overview'} />;
      return <Sandboxes />;
    case 'snapshots':
      return <Snapshots />;
    case 'volumes':
      return <Volumes />;
    case 'templates':
      return <Templates session={session} />;
    case 'secrets':
      return <Secrets />;
    case 'usage':
      return <Usage session={session} />;
    case 'admin':
      return <Admin session={session} />;
    case 'approvals':
      return <Approvals session={session} />;
  }
  return null;
}

function pageTitle(path) {
  const p = path.split('/').filter(Boolean);
  const names = { sandboxes: 'Sandboxes', snapshots: 'Snapshots', volumes: 'Volumes', templates: 'Templates', secrets: 'Secrets', usage: 'Usage', approvals: 'Approvals', admin: 'Keys & tenants', signin: 'Sign in' };
  if (!known(path)) return 'Nothing here';
  if (p[0] === 'sandboxes' && p[1]) return decodeURIComponent(p[1]);
  return names[p[0]] || '';
}

render(<App />, document.getElementById('app'));
