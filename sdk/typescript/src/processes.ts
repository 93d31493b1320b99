// Background processes of a sandbox, and commands by exec id: started at
// once, outliving the request (and a restart of the server), their output
// kept and read again from any offset.
import { OutputStream, toExecRequest, type Command } from "./exec.js";
import { sandboxPath, type Body, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Where an output read starts, and whether it follows the command to its end. */
export interface OutputOptions extends CallOptions {
  /** The byte offset to start at (stdout and stderr counted together); default 0. */
  offset?: number;
  /** Follow new output until the command ends (else read what is kept and stop). */
  follow?: boolean;
}

/** The background processes of one sandbox. */
export class Processes {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /** start starts a command in the background and answers its pid, tag and exec id at once. */
  start(command: Command, opts: CallOptions & { tag?: string } = {}): Promise<api.Background> {
    const req: api.ExecRequest = { ...toExecRequest(command), background: true };
    if (opts.tag !== undefined) req.tag = opts.tag;
    return this.t.json("POST", sandboxPath(this.id, "/exec"), { json: req, signal: opts.signal });
  }

  /** list lists the sandbox's background processes, oldest first. */
  async list(opts: CallOptions = {}): Promise<api.Process[]> {
    return (await this.t.json<api.ProcessList>("GET", sandboxPath(this.id, "/processes"), opts)).processes;
  }

  /** output reads a process's output from opts.offset: re-attach to it with the offset of what you had read. */
  async output(pid: number, opts: OutputOptions = {}): Promise<OutputStream> {
    return output(this.t, sandboxPath(this.id, `/processes/${pid}/output`), opts);
  }

  /** writeStdin writes data to the process's stdin; a stream is sent as it yields. */
  async writeStdin(pid: number, data: Body, opts: CallOptions = {}): Promise<number> {
    const r = await this.t.json<{ bytes: number }>("POST", sandboxPath(this.id, `/processes/${pid}/stdin`), { body: data, signal: opts.signal });
    return r.bytes;
  }

  /** closeStdin closes the process's stdin. */
  closeStdin(pid: number, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("POST", sandboxPath(this.id, `/processes/${pid}/stdin/close`), opts);
  }

  /** signal sends a signal ("TERM", "SIGKILL", "15") to the process. */
  signal(pid: number, signal: string | number, opts: CallOptions = {}): Promise<void> {
    const body: api.Signal = { signal: String(signal) };
    return this.t.empty("POST", sandboxPath(this.id, `/processes/${pid}/signal`), { json: body, signal: opts.signal });
  }
}

/** Commands of one sandbox by exec id: background ones and those streamed to a client. */
export class Execs {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /** get says whether a command runs and how it ended. */
  get(execId: string, opts: CallOptions = {}): Promise<api.ExecInfo> {
    return this.t.json("GET", sandboxPath(this.id, `/execs/${encodeURIComponent(execId)}`), opts);
  }

  /** output reads a kept command's output from opts.offset (output_kept in get). */
  output(execId: string, opts: OutputOptions = {}): Promise<OutputStream> {
    return output(this.t, sandboxPath(this.id, `/execs/${encodeURIComponent(execId)}/output`), opts);
  }
}

async function output(t: Transport, path: string, opts: OutputOptions): Promise<OutputStream> {
  const offset = opts.offset ?? 0;
  const body = await t.stream("GET", path, {
    query: { offset, follow: opts.follow ? 1 : undefined },
    headers: { Accept: "text/event-stream" },
    signal: opts.signal,
  });
  return new OutputStream(body, offset);
}
