// The console's only way to the server: the public /v1 API, authenticated
// by the HttpOnly session cookie. Every request carries X-Airlock-CSRF,
// which the server demands of cookie requests that change state: a page on
// another origin cannot set it without a CORS preflight the server refuses.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let unauthorized = () => {};

// onUnauthorized sets what a 401 does (send the user to the sign-in page).
export function onUnauthorized(f) {
  unauthorized = f;
}

// api calls the API. opts: method, json (a body sent as JSON), body (sent
// as is), headers (more request headers), query (an object), raw (answer
// the Response), text (answer text), signal, quiet401 (do not leave the
// page on a 401).
export async function api(path, opts = {}) {
  const headers = { ...opts.headers, 'X-Airlock-CSRF': '1' };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const s = q.toString();
    if (s) url += (url.includes('?') ? '&' : '?') + s;
  }
  let res;
  try {
    res = await fetch(url, {
      method: opts.method || 'GET',
      credentials: 'same-origin',
      headers,
      body,
      signal: opts.signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The server did not answer: ' + e.message);
  }
  if (res.status === 401 && !opts.quiet401) {
    unauthorized();
  }
  if (!res.ok) {
    let code = 'http_' + res.status;
    let message = res.status + ' ' + res.statusText;
    try {
      const j = await res.json();
      if (j && j.error) {
        code = j.error.code || code;
        message = j.error.message || message;
      }
    } catch {
      // Not JSON: the status line says enough.
    }
    throw new ApiError(res.status, code, message);
  }
  if (opts.raw) return res;
  if (res.status === 204) return null;
  if (opts.text) return res.text();
  const type = res.headers.get('Content-Type') || '';
  if (type.includes('json') && !type.includes('ndjson')) return res.json();
  return res.text();
}

// sandboxPath is the API path of a sandbox, plus rest.
export function sandboxPath(id, rest = '') {
  return '/v1/sandboxes/' + encodeURIComponent(id) + rest;
}

// fileURL is where a sandbox file downloads from (a GET: the cookie is
// enough, so a plain link works).
export function fileURL(id, path) {
  return sandboxPath(id, '/files?path=' + encodeURIComponent(path));
}

// ndjson splits a JSON-lines answer.
export function ndjson(text) {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

// sse parses a finished server-sent event stream into [{event, data}].
export function sse(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event = 'message';
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':') || line === '') continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) {
      try {
        out.push({ event, data: JSON.parse(data.join('\n')) });
      } catch {
        out.push({ event, data: data.join('\n') });
      }
    }
  }
  return out;
}
