// How the console reads an image import: the server-sent events of
// POST /v1/templates and PUT /v1/templates/{name}/image as they arrive
// (progress per layer, then one template or one error), and the names it
// checks before sending anything. pages/templates.jsx shows them.
import { sse } from './api.js';
import { bytes } from './format.js';

// sseTake splits buf, the text of a stream read so far, into its finished
// events and the rest: an event is finished by a blank line, so the rest
// (a part event, cut mid-chunk) waits for the next read.
export function sseTake(buf) {
  const end = /\r?\n\r?\n/g;
  let cut = -1;
  for (let m; (m = end.exec(buf)); ) cut = m.index + m[0].length;
  if (cut < 0) return { events: [], rest: buf };
  return { events: sse(buf.slice(0, cut)), rest: buf.slice(cut) };
}

// readEvents reads an event stream (a fetch Response's body) to its end,
// calling onEvent with each {event, data} as soon as it is whole.
export async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const { events, rest } = sseTake(buf + value);
    buf = rest;
    events.forEach(onEvent);
  }
  sse(buf).forEach(onEvent); // a last event the stream did not end with a blank line
}

// An import as the page shows it: each layer's progress (layers[i] is
// layer i+1), then the template, or the error.
export const importStart = { layers: [], template: null, error: null };

// importStep is the import after event ev.
export function importStep(st, ev) {
  switch (ev.event) {
    case 'progress': {
      const p = ev.data || {};
      if (!(p.layer >= 1)) return st;
      const layers = st.layers.slice();
      layers[p.layer - 1] = { layer: p.layer, of: p.layers, digest: p.digest || '', bytes: p.bytes || 0, total: p.total, done: !!p.done };
      return { ...st, layers };
    }
    case 'template':
      return { ...st, template: ev.data };
    case 'error':
      return { ...st, error: (ev.data && ev.data.message) || String(ev.data || 'the import failed') };
  }
  return st; // keep-alives and events this console does not know
}

// importEnd is the import once its stream has ended: one that ended with
// neither a template nor an error was cut off.
export function importEnd(st) {
  if (st.template || st.error) return st;
  return { ...st, error: 'The server ended the import without a result: look in the list whether the template arrived, or import it again.' };
}

// layerFraction is how far along layer l is, 0 to 1, or null when its
// size is not known (a registry that does not say) and it is not done.
export function layerFraction(l) {
  if (l.done) return 1;
  if (!(l.total > 0)) return null;
  return Math.min(1, l.bytes / l.total);
}

// layerText is a layer's line: "Layer 1/2", and "64.0 KiB of 1.2 MiB".
export function layerText(l) {
  const n = `Layer ${l.layer}/${l.of}`;
  const read = l.total > 0 ? `${bytes(l.bytes)} of ${bytes(l.total)}` : bytes(l.bytes);
  return { name: n, read: l.done ? `${read}, done` : read };
}

// shortDigest is a digest cut to what a person compares: sha256:0123abcd4567.
export function shortDigest(d) {
  if (!d) return '';
  const [alg, hex] = d.includes(':') ? d.split(':', 2) : ['', d];
  return (alg ? alg + ':' : '') + hex.slice(0, 12);
}

// templateNameError is what is wrong with a new template's name as the
// server reads it (1-63 of a-z, 0-9 and '-', not starting with '-', not
// base, not one of taken), or null. The upload form checks it before
// sending: the server reads a tarball to its end before it looks at the
// name.
export function templateNameError(name, taken = []) {
  const s = name.trim();
  if (s === '') return 'Give the template a name: sandboxes are created from it by that name';
  if (s === 'base') return 'base is the built-in template: pick another name';
  if (s.length > 63) return `The name is ${s.length} characters long: at most 63`;
  if (s.startsWith('-')) return 'The name cannot start with "-"';
  const bad = s.match(/[^a-z0-9-]/);
  if (bad) return `"${bad[0]}" cannot be in a template name: lower-case letters, digits and '-' only`;
  if (taken.includes(s)) return `There is a template named ${s} already`;
  return null;
}

// imageRefError is what is wrong with an image reference at a glance, or
// null; the server checks the rest when it pulls.
export function imageRefError(ref) {
  const s = ref.trim();
  if (s === '') return 'Give an image reference such as registry.example.com/team/app:1.2';
  if (/\s/.test(s)) return 'An image reference has no spaces';
  if (/^[a-z]+:\/\//i.test(s)) return `Leave out "${s.split('//')[0]}//": write registry.example.com/team/app:1.2`;
  return null;
}
