// Sandboxes: the collection (create, get, list, delete) and a handle on one
// sandbox, through which its commands, files, sessions, processes, network
// and audit log are reached.
import { Audit } from "./audit.js";
import { ExecStream, toExecRequest, type Command } from "./exec.js";
import { Files } from "./files.js";
import { Network } from "./network.js";
import { Execs, Processes } from "./processes.js";
import { Sessions } from "./sessions.js";
import { sandboxPath, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** A sandbox as the server describes it. */
export type SandboxInfo = api.Sandbox;

/** Which sandboxes to list: metadata pairs must all match; pass a page's next as after. */
export type ListQuery = api.Operations["listSandboxes"]["query"];

/**
 * Sandbox is a handle on one sandbox. `info` is the sandbox as the server
 * last described it to this handle (refresh() asks again).
 */
export class Sandbox {
  /** The sandbox's files. */
  readonly files: Files;
  /** Its background processes. */
  readonly processes: Processes;
  /** Its commands by exec id (re-attach to one's output). */
  readonly execs: Execs;
  /** Its sessions (shells kept between calls) and their terminals. */
  readonly sessions: Sessions;
  /** Its egress policy and log. */
  readonly network: Network;
  /** Its audit log. */
  readonly audit: Audit;

  /** @internal */
  constructor(
    private readonly t: Transport,
    readonly id: string,
    public info?: SandboxInfo,
  ) {
    this.files = new Files(t, id);
    this.processes = new Processes(t, id);
    this.execs = new Execs(t, id);
    this.sessions = new Sessions(t, id);
    this.network = new Network(t, id);
    this.audit = new Audit(t, id);
  }

  /** refresh asks the server for the sandbox again and returns it. */
  async refresh(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.keep(this.t.json<SandboxInfo>("GET", sandboxPath(this.id), opts));
  }

  /** delete destroys the sandbox. */
  delete(opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", sandboxPath(this.id), opts);
  }

  /** pause freezes every process: memory kept, no CPU used, the lifetime clock stopped until resume. */
  pause(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.keep(this.t.json<SandboxInfo>("POST", sandboxPath(this.id, "/pause"), opts));
  }

  /** resume thaws a paused sandbox. */
  resume(opts: CallOptions = {}): Promise<SandboxInfo> {
    return this.keep(this.t.json<SandboxInfo>("POST", sandboxPath(this.id, "/resume"), opts));
  }

  /** setTimeout makes the sandbox expire seconds from now (1 to 86400). */
  setTimeout(seconds: number, opts: CallOptions = {}): Promise<SandboxInfo> {
    const body: api.SetTimeout = { timeout_s: seconds };
    return this.keep(this.t.json<SandboxInfo>("POST", sandboxPath(this.id, "/timeout"), { json: body, signal: opts.signal }));
  }

  /**
   * exec runs a command to its end and returns its result, stdout and
   * stderr each capped at 1 MiB (truncated past it). A string is a shell
   * command line, an array an argv. A non-zero exit is a result, not an
   * error.
   */
  exec(command: Command, opts: CallOptions = {}): Promise<api.ExecResult> {
    return this.t.json("POST", sandboxPath(this.id, "/exec"), { json: toExecRequest(command), signal: opts.signal });
  }

  /**
   * execStream runs a command and resolves, once the server has taken it,
   * to its output as it comes, uncapped: iterate it with for await, then
   * read `exit` (or call wait()). Aborting opts.signal ends the request and
   * the command.
   */
  async execStream(command: Command, opts: CallOptions = {}): Promise<ExecStream> {
    const res = await this.t.send("POST", sandboxPath(this.id, "/exec"), {
      json: toExecRequest(command),
      headers: { Accept: "text/event-stream" },
      signal: opts.signal,
    });
    const reopen = (execId: string) => (offset: number, signal?: AbortSignal) => this.execs.output(execId, { offset, follow: true, signal });
    return new ExecStream(res, reopen, opts.signal);
  }

  /** metrics returns what the sandbox used: live while it runs, final after. */
  metrics(opts: CallOptions = {}): Promise<api.SandboxMetrics> {
    return this.t.json("GET", sandboxPath(this.id, "/metrics"), opts);
  }

  /** metricsHistory returns the running sandbox's readings of the last 5 minutes, oldest first. */
  metricsHistory(opts: CallOptions = {}): Promise<api.SandboxMetricsHistory> {
    return this.t.json("GET", sandboxPath(this.id, "/metrics/history"), opts);
  }

  /**
   * createToken returns a credential for this sandbox only, valid for
   * ttlSeconds: hand it to an agent that must not reach other sandboxes
   * (API keys only).
   */
  createToken(ttlSeconds: number, opts: CallOptions = {}): Promise<api.Token> {
    const body: api.TokenRequest = { ttl_s: ttlSeconds };
    return this.t.json("POST", sandboxPath(this.id, "/tokens"), { json: body, signal: opts.signal });
  }

  /** snapshot saves the sandbox's files as a snapshot (name: the server picks one). */
  snapshot(req: api.SnapshotRequest = {}, opts: CallOptions = {}): Promise<api.Snapshot> {
    return this.t.json("POST", sandboxPath(this.id, "/snapshots"), { json: req, signal: opts.signal });
  }

  /** fork makes req.count sandboxes whose files are this one's now (processes and memory are not copied). */
  async fork(req: api.ForkRequest, opts: CallOptions = {}): Promise<Sandbox[]> {
    const r = await this.t.json<api.ForkResult>("POST", sandboxPath(this.id, "/fork"), { json: req, signal: opts.signal });
    return r.sandboxes.map((s) => new Sandbox(this.t, s.id, s));
  }

  /** portURL is the URL at which the server proxies HTTP to port inside the sandbox. */
  portURL(port: number, path = "/"): string {
    return this.t.url(sandboxPath(this.id, `/ports/${port}${path.startsWith("/") ? path : "/" + path}`));
  }

  /**
   * fetchPort sends an HTTP request to a server the sandbox runs on port,
   * with this client's credential, and returns its answer as it is (any
   * status; 502 when nothing listens).
   */
  fetchPort(port: number, path = "/", init: RequestInit = {}): Promise<Response> {
    return fetchWith(this.t, this.portURL(port, path), init);
  }

  private async keep(p: Promise<SandboxInfo>): Promise<SandboxInfo> {
    this.info = await p;
    return this.info;
  }
}

/** The caller's sandboxes. */
export class Sandboxes {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** create creates a sandbox (every field optional) and returns it once it runs. */
  async create(req: api.CreateSandbox = {}, opts: CallOptions = {}): Promise<Sandbox> {
    const info = await this.t.json<SandboxInfo>("POST", "/v1/sandboxes", { json: req, signal: opts.signal });
    return new Sandbox(this.t, info.id, info);
  }

  /** get returns a handle on the sandbox with its current state (NotFoundError if it is not the caller's). */
  async get(id: string, opts: CallOptions = {}): Promise<Sandbox> {
    const sb = new Sandbox(this.t, id);
    await sb.refresh(opts);
    return sb;
  }

  /** list returns one page of the caller's sandboxes, ids ascending; pass its next as after for the next page. */
  list(query: ListQuery = {}, opts: CallOptions = {}): Promise<api.SandboxList> {
    const { metadata, ...rest } = query;
    const q: Record<string, string | number | undefined> = { ...rest };
    for (const [k, v] of Object.entries(metadata ?? {})) q[`metadata.${k}`] = v;
    return this.t.json("GET", "/v1/sandboxes", { query: q, signal: opts.signal });
  }

  /** all iterates over every sandbox the query selects, a page at a time. */
  async *all(query: Omit<ListQuery, "after"> = {}, opts: CallOptions = {}): AsyncGenerator<SandboxInfo> {
    let after: string | undefined;
    do {
      const page = await this.list({ ...query, after }, opts);
      yield* page.sandboxes;
      after = page.next || undefined;
    } while (after);
  }

  /** delete destroys the sandbox id. */
  delete(id: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", sandboxPath(id), opts);
  }

  /** metrics returns the usage of the caller's sandboxes among ids (up to 100; others are left out). */
  async metrics(ids: string[], opts: CallOptions = {}): Promise<api.SandboxMetrics[]> {
    const r = await this.t.json<api.Operations["sandboxesMetrics"]["response"]>("GET", "/v1/sandboxes/metrics", { query: { ids: ids.join(",") }, signal: opts.signal });
    return r.metrics;
  }
}

/** fetchWith is fetch with the client's credential, its answer untouched. */
export function fetchWith(t: Transport, url: string, init: RequestInit): Promise<Response> {
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(t.headers())) if (!headers.has(k)) headers.set(k, v);
  const f = t.fetch;
  return f(url, { ...init, headers });
}
