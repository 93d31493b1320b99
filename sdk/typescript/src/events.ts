// The tenant's event stream (GET /v1/events): server-sent events with ids,
// resumed exactly by the last id seen.
import { ConnectionError, StreamDroppedError, errorOf } from "./errors.js";
import { events as sse } from "./sse.js";
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Where an event stream starts and what it carries. */
export interface EventsOptions extends CallOptions {
  /** Resume after this event id: the kept events since come first, then live ones. */
  after?: number;
  /** Replay every event the server kept before the live ones (after 0). */
  fromStart?: boolean;
  /** Only these types. */
  types?: api.Event["type"][];
}

/**
 * EventStream is the tenant's events in order: iterate it with for await
 * (break, or abort the signal, to stop). `lastId` is the id of the last
 * event handed out: pass it as `after` to resume with nothing missed or
 * repeated. The server dropping a client that fell too far behind is a
 * StreamDroppedError; a stream the server ends (shutting down) a
 * ConnectionError. It does not reconnect on its own.
 */
export class EventStream implements AsyncIterable<api.Event> {
  lastId: number;
  private it?: AsyncGenerator<api.Event>;

  /** @internal */
  constructor(
    private readonly body: ReadableStream<Uint8Array>,
    after: number,
  ) {
    this.lastId = after;
  }

  [Symbol.asyncIterator](): AsyncGenerator<api.Event> {
    this.it ??= this.read();
    return this.it;
  }

  private async *read(): AsyncGenerator<api.Event> {
    for await (const ev of sse(this.body)) {
      if (ev.type === "dropped" || ev.type === "error") {
        const e = JSON.parse(ev.data) as { code: string; message: string };
        throw ev.type === "dropped" ? new StreamDroppedError(e.message, { code: e.code }) : errorOf(0, e.code, e.message);
      }
      const e = JSON.parse(ev.data) as api.Event;
      // Counted as handed out before the loop body runs: a consumer that
      // breaks on it resumes after it.
      this.lastId = e.id;
      yield e;
    }
    throw new ConnectionError(`the event stream ended (the server is shutting down?); resume after ${this.lastId}`);
  }
}

/** openEvents resolves once the stream is live: events from then on are not missed. */
export async function openEvents(t: Transport, opts: EventsOptions = {}): Promise<EventStream> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  const query: Record<string, string | number | undefined> = { type: opts.types?.join(",") };
  if (opts.after && opts.after > 0) headers["Last-Event-ID"] = String(opts.after);
  else if (opts.fromStart) query.after = 0;
  const body = await t.stream("GET", "/v1/events", { query, headers, signal: opts.signal });
  return new EventStream(body, opts.after ?? 0);
}
