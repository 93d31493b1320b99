// Readers of the API's streamed answers: server-sent events (exec output,
// process output, the event stream, task events, image imports) and JSON
// lines (the audit log), over a fetch body. They hold one event or line at
// a time, never a whole answer.
import { AirlockError, ConnectionError } from "./errors.js";

/** One dispatched server-sent event. */
export interface SSEEvent {
  /** "message" when the event named none. */
  type: string;
  /** Its data lines joined by "\n". */
  data: string;
  /** Its id field, when it had one. */
  id?: string;
}

/** maxLine bounds one line, so a server that never ends one cannot make the client hold its whole answer. */
const maxLine = 16 << 20;

/**
 * lines yields the lines of a byte stream, split at "\r\n", "\n" or a lone
 * "\r" as the HTML standard's event-stream parser does (with crToo false,
 * at "\n" only, for JSON lines). Returning early cancels the body.
 */
export async function* lines(body: ReadableStream<Uint8Array>, crToo = true): AsyncGenerator<string> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let done = false;
  try {
    while (!done) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw brokeOff(e);
      }
      done = chunk.done;
      buf += done ? dec.decode() : dec.decode(chunk.value, { stream: true });
      for (;;) {
        const i = crToo ? firstBreak(buf) : buf.indexOf("\n");
        if (i < 0) break;
        // A "\r" at the end of what has come may be half of "\r\n": wait.
        if (buf[i] === "\r" && i === buf.length - 1 && !done) break;
        yield buf.slice(0, i);
        buf = buf.slice(i + (buf[i] === "\r" && buf[i + 1] === "\n" ? 2 : 1));
      }
      if (buf.length > maxLine) throw new AirlockError("a line of the answer is longer than 16 MiB");
    }
    if (buf !== "") yield buf;
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function firstBreak(s: string): number {
  const n = s.indexOf("\n"), r = s.indexOf("\r");
  if (n < 0) return r;
  if (r < 0) return n;
  return Math.min(n, r);
}

/**
 * events yields the server-sent events of a body: comments skipped, fields
 * other than event, data and id ignored, an event without data not
 * dispatched, one cut off by the end of the stream dropped.
 */
export async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEEvent> {
  let type = "", data: string[] = [], id: string | undefined;
  let first = true;
  for await (let line of lines(body)) {
    if (first) {
      line = line.replace(/^\uFEFF/, "");
      first = false;
    }
    if (line === "") {
      if (data.length > 0) yield { type: type || "message", data: data.join("\n"), ...(id === undefined ? {} : { id }) };
      type = "";
      data = [];
      id = undefined;
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") type = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
}

/** brokeOff wraps what a body's reader threw: an abort stays an abort. */
export function brokeOff(e: unknown): unknown {
  if (e instanceof AirlockError || isAbort(e)) return e;
  return new ConnectionError(`the answer broke off: ${e instanceof Error ? e.message : String(e)}`, { cause: e, code: "" });
}

/** isAbort reports whether e is what an AbortSignal's abort makes fetch throw. */
export function isAbort(e: unknown): boolean {
  return typeof e === "object" && e !== null && ((e as { name?: string }).name === "AbortError" || (e as { name?: string }).name === "TimeoutError");
}
