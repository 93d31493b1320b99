// History routing: the server answers index.html for every path outside
// /v1, so /sandboxes/ID/terminal can be bookmarked and reloaded.
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set();

export function navigate(to, { replace = false } = {}) {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((f) => f());
}

window.addEventListener('popstate', () => listeners.forEach((f) => f()));

// usePath re-renders its component when the path changes.
export function usePath() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const f = () => setPath(location.pathname);
    listeners.add(f);
    return () => listeners.delete(f);
  }, []);
  return path;
}

// useQuery is the page's query string as URLSearchParams, and a setter
// that replaces the given keys (an empty value removes one) in a new
// history entry (or in place, with replace), so a filter survives a reload
// and the back button undoes it.
export function useQuery() {
  const [search, setSearch] = useState(location.search);
  useEffect(() => {
    const f = () => setSearch(location.search);
    listeners.add(f);
    return () => listeners.delete(f);
  }, []);
  const set = (changes, opts) => {
    const q = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(changes)) {
      if (v === '' || v === undefined || v === null) q.delete(k);
      else q.set(k, v);
    }
    const s = q.toString();
    navigate(location.pathname + (s ? '?' + s : ''), opts);
  };
  return [new URLSearchParams(search), set];
}

// Link is an <a> that routes inside the app on a plain click and leaves
// modified clicks (new tab, new window) to the browser.
export function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (rest.onClick) rest.onClick(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} {...rest} onClick={onClick}>
      {children}
    </a>
  );
}
