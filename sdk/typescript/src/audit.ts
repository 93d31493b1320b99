// A sandbox's audit log: read (streamed JSON lines), verified against its
// hash chain by the server, exported as a signed archive, replayed as
// asciicasts.
import { lines } from "./sse.js";
import { sandboxPath, type ByteStream, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Which events to read; types is a list here, joined for the API. */
export type AuditQuery = Omit<api.Operations["auditLog"]["query"], "type"> & { types?: string[] };

/** The audit log of one sandbox (API keys only; a sandbox token gets ForbiddenError). */
export class Audit {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /**
   * events reads the events the query selects, oldest first, as they
   * arrive: iterate the answer with for await (breaking off cancels the
   * rest).
   */
  async events(query: AuditQuery = {}, opts: CallOptions = {}): Promise<AsyncIterable<api.AuditEvent>> {
    const { types, ...rest } = query;
    const body = await this.t.stream("GET", sandboxPath(this.id, "/audit"), {
      query: { ...rest, type: types?.join(",") },
      signal: opts.signal,
    });
    return (async function* () {
      for await (const line of lines(body, false)) {
        if (line.trim() !== "") yield JSON.parse(line) as api.AuditEvent;
      }
    })();
  }

  /** list reads the events the query selects into an array. */
  async list(query: AuditQuery = {}, opts: CallOptions = {}): Promise<api.AuditEvent[]> {
    const out: api.AuditEvent[] = [];
    for await (const e of await this.events(query, opts)) out.push(e);
    return out;
  }

  /** verify has the server check the log against its hash chain. */
  verify(opts: CallOptions = {}): Promise<api.AuditVerify> {
    return this.t.json("GET", sandboxPath(this.id, "/audit/verify"), opts);
  }

  /**
   * export streams the whole log as one gzipped tar (manifest.json,
   * signed; events.jsonl; casts/ID.cast), for `airlock audit verify FILE`.
   */
  export(opts: CallOptions = {}): Promise<ByteStream> {
    return this.t.stream("GET", sandboxPath(this.id, "/audit/export"), opts);
  }

  /** cast is an asciicast (v2) of one command's output (execId) or of the whole sandbox. */
  cast(opts: CallOptions & { execId?: string } = {}): Promise<string> {
    return this.t.text("GET", sandboxPath(this.id, "/audit/cast"), { query: { exec: opts.execId }, signal: opts.signal });
  }
}
