// Streamed command output: an exec's SSE answer (ExecStream), and a
// background or streamed command's kept output read from a byte offset
// (OutputStream). Both are async iterables of chunks, read as they come.
import { AirlockError, ConnectionError, UnavailableError, errorOf } from "./errors.js";
import { events, isAbort } from "./sse.js";
import { base64Bytes } from "./transport.js";
import type * as api from "./types.gen.js";

/** One piece of a command's output. */
export interface OutputChunk {
  stream: "stdout" | "stderr";
  data: Uint8Array;
  /** Where data starts in the command's output, stdout and stderr counted together. */
  offset: number;
}

/** A command: a shell string, an argv, or a whole request. */
export type Command = string | string[] | ExecRequest;

/** What exec and execStream take: exactly one of cmd and command (background and tag belong to processes.start). */
export type ExecRequest = Omit<api.ExecRequest, "background" | "tag">;

export function toExecRequest(c: Command): ExecRequest {
  if (typeof c === "string") return { command: c };
  if (Array.isArray(c)) return { cmd: c };
  return c;
}

/** How long execStream tries to re-attach to a command whose stream broke. */
const resumeFor = 60_000;

/** reopen opens a command's kept output from offset, following it to its end. */
export type Reopen = (offset: number, signal?: AbortSignal) => Promise<OutputStream>;

/**
 * ExecStream is a running command's output as it comes. Iterate it (once)
 * with for await; then `exit` says how it ended. Or call wait(), which
 * reads (and drops) what is left and returns the exit. A command whose
 * output nobody reads is slowed by the server rather than lose output.
 *
 * When the stream breaks after the command started (the server
 * restarted), the command goes on: the stream follows it again by its
 * exec id from the byte it had reached, for up to a minute.
 */
export class ExecStream implements AsyncIterable<OutputChunk> {
  /** The command's pid in the sandbox, from the start event. */
  pid?: number;
  /** The command's id in the audit log (execs.get, audit.cast), from the start event. */
  execId?: string;
  /** How the command ended, once the stream is read to its end. */
  exit?: api.ExecExit;
  private it?: AsyncGenerator<OutputChunk>;

  /** @internal */
  constructor(
    private readonly res: Response,
    private readonly reopen: (execId: string) => Reopen,
    private readonly signal?: AbortSignal,
  ) {}

  [Symbol.asyncIterator](): AsyncGenerator<OutputChunk> {
    this.it ??= this.read();
    return this.it;
  }

  /** wait reads the rest of the output, dropping it, and returns how the command ended. */
  async wait(): Promise<api.ExecExit> {
    for await (const _ of this) {
      // dropped
    }
    if (!this.exit) throw new AirlockError("the exec stream was closed before its exit event");
    return this.exit;
  }

  private async *read(): AsyncGenerator<OutputChunk> {
    if (!(this.res.headers.get("Content-Type") ?? "").startsWith("text/event-stream")) {
      // A server (or a proxy) that does not stream answers the whole result.
      const { stdout, stderr, ...exit } = (await this.res.json()) as api.ExecResult;
      const enc = new TextEncoder();
      const out = enc.encode(stdout), err = enc.encode(stderr);
      if (out.length) yield { stream: "stdout", data: out, offset: 0 };
      if (err.length) yield { stream: "stderr", data: err, offset: out.length };
      this.exit = exit;
      return;
    }
    let received = 0;
    let cause: unknown;
    try {
      for await (const ev of events(this.res.body!)) {
        switch (ev.type) {
          case "start": {
            const s = JSON.parse(ev.data) as { pid?: number; exec_id?: string };
            this.pid = s.pid;
            this.execId = s.exec_id;
            break;
          }
          case "stdout":
          case "stderr": {
            const data = base64Bytes((JSON.parse(ev.data) as { data: string }).data);
            const offset = received;
            received += data.length;
            yield { stream: ev.type, data, offset };
            break;
          }
          case "exit":
            this.exit = JSON.parse(ev.data) as api.ExecExit;
            return;
          case "error": {
            const e = JSON.parse(ev.data) as { code: string; message: string };
            throw errorOf(0, e.code, e.message);
          }
          // Events this SDK does not know yet are skipped.
        }
      }
      throw new ConnectionError("the exec stream ended before its exit event");
    } catch (e) {
      if (!this.execId || isAbort(e) || this.signal?.aborted || !(e instanceof ConnectionError || e instanceof UnavailableError)) throw e;
      cause = e;
    }
    // The stream broke after the command started: follow it by its exec
    // id from where the stream stopped.
    yield* this.resume(received, cause);
  }

  private async *resume(from: number, cause: unknown): AsyncGenerator<OutputChunk> {
    const deadline = Date.now() + resumeFor;
    let wait = 100;
    let received = from;
    const reopen = this.reopen(this.execId!);
    for (;;) {
      let err: unknown;
      try {
        const out = await reopen(received, this.signal);
        for await (const c of out) {
          received = c.offset + c.data.length;
          yield c;
        }
        if (out.exit) {
          this.exit = { ...out.exit, exec_id: this.execId };
          return;
        }
        err = new ConnectionError("the command's output ended before its exit");
      } catch (e) {
        err = e;
      }
      const retry = err instanceof ConnectionError || err instanceof UnavailableError || (err instanceof AirlockError && (err.status === 502 || err.status === 503));
      if (!retry || isAbort(err) || this.signal?.aborted || Date.now() > deadline) {
        const msg = err instanceof Error ? err.message : String(err);
        throw new (err instanceof AirlockError ? (err.constructor as typeof AirlockError) : ConnectionError)(
          `${cause instanceof Error ? cause.message : String(cause)}; re-attaching to exec ${this.execId}: ${msg}`,
          { status: err instanceof AirlockError ? err.status : 0, code: err instanceof AirlockError ? err.code : "", cause: err },
        );
      }
      await sleep(wait, this.signal);
      wait = Math.min(2 * wait, 2000);
    }
  }
}

/**
 * OutputStream is a command's kept output from an offset: a background
 * process's, or a command's by exec id. Iterate it (once) with for await.
 * Then `offset` is where to resume, `exit` is set if the command ended,
 * and `dropped` counts bytes the server no longer kept.
 */
export class OutputStream implements AsyncIterable<OutputChunk> {
  /** The offset after the last byte read: pass it to resume. */
  offset: number;
  /** How the command ended, when it did (following, or reading one that had). */
  exit?: api.ExecExit;
  /** Bytes before the oldest kept one that this read skipped. */
  dropped = 0;
  private it?: AsyncGenerator<OutputChunk>;

  /** @internal */
  constructor(
    private readonly body: ReadableStream<Uint8Array>,
    offset: number,
  ) {
    this.offset = offset;
  }

  [Symbol.asyncIterator](): AsyncGenerator<OutputChunk> {
    this.it ??= this.read();
    return this.it;
  }

  /** text reads the rest as UTF-8 (both streams in order). */
  async text(): Promise<string> {
    const dec = new TextDecoder();
    let s = "";
    for await (const c of this) s += dec.decode(c.data, { stream: true });
    return s + dec.decode();
  }

  private async *read(): AsyncGenerator<OutputChunk> {
    for await (const ev of events(this.body)) {
      switch (ev.type) {
        case "stdout":
        case "stderr": {
          const d = JSON.parse(ev.data) as { data: string; offset: number };
          const data = base64Bytes(d.data);
          this.offset = d.offset + data.length;
          yield { stream: ev.type, data, offset: d.offset };
          break;
        }
        case "dropped":
          this.dropped += (JSON.parse(ev.data) as { bytes: number }).bytes;
          break;
        case "end":
          this.offset = (JSON.parse(ev.data) as { offset: number }).offset;
          return;
        case "exit": {
          const { offset, ...exit } = JSON.parse(ev.data) as api.ExecExit & { offset: number };
          this.offset = offset;
          this.exit = exit;
          return;
        }
        case "error": {
          const e = JSON.parse(ev.data) as { code: string; message: string };
          throw errorOf(0, e.code, e.message);
        }
      }
    }
    throw new ConnectionError("the output stream ended before its end or exit event");
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
