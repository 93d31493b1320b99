// Tasks: a harness run in a sandbox of its own, its normalized events
// streamed (and followed again across a restart of the server), its
// artifacts and workspace diff kept.
import { AirlockError, ConnectionError, UnavailableError, errorOf } from "./errors.js";
import { sleep } from "./exec.js";
import { events as sse, isAbort } from "./sse.js";
import type { ByteStream, CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Which tasks to list; states is a list here, joined for the API. */
export type TaskListQuery = Omit<api.Operations["listTasks"]["query"], "state"> & { states?: api.Task["state"][] };

/** How long follow waits for a broken stream to come back without an event. */
const resumeFor = 60_000;

function taskPath(id: string, suffix = ""): string {
  return `/v1/tasks/${encodeURIComponent(id)}${suffix}`;
}

/** The caller's tasks. */
export class Tasks {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** create submits a task; it is queued and runs when the tenant's concurrency allows. */
  create(req: api.TaskRequest, opts: CallOptions = {}): Promise<api.Task> {
    return this.t.json("POST", "/v1/tasks", { json: req, signal: opts.signal });
  }

  /** get returns a task. */
  get(id: string, opts: CallOptions = {}): Promise<api.Task> {
    return this.t.json("GET", taskPath(id), opts);
  }

  /** list returns one page of the caller's tasks, ids ascending; pass its next as after. */
  list(query: TaskListQuery = {}, opts: CallOptions = {}): Promise<api.TaskList> {
    const { states, ...rest } = query;
    return this.t.json("GET", "/v1/tasks", { query: { ...rest, state: states?.join(",") }, signal: opts.signal });
  }

  /** harnesses lists the harnesses, their pinned versions, and whether the server has each one's template. */
  async harnesses(opts: CallOptions = {}): Promise<api.Harness[]> {
    return (await this.t.json<api.HarnessList>("GET", "/v1/harnesses", opts)).harnesses;
  }

  /** cancel cancels a task and returns it as it ended. */
  cancel(id: string, opts: CallOptions = {}): Promise<api.Task> {
    return this.t.json("POST", taskPath(id, "/cancel"), opts);
  }

  /** events returns the task's stored events numbered above query.after. */
  async events(id: string, query: api.Operations["taskEvents"]["query"] = {}, opts: CallOptions = {}): Promise<api.TaskEvent[]> {
    return (await this.t.json<api.TaskEventList>("GET", taskPath(id, "/events"), { query, signal: opts.signal })).events;
  }

  /**
   * follow resolves, once the server has answered, to the task's events
   * numbered above opts.after as they come, ending after task.finished.
   * A stream that breaks (the server restarted: the task goes on) is
   * followed again from the last event, for up to a minute without one.
   */
  async follow(id: string, opts: CallOptions & { after?: number } = {}): Promise<TaskEventStream> {
    const open = (after: number) =>
      this.t.stream("GET", taskPath(id, "/events"), { headers: { Accept: "text/event-stream", "Last-Event-ID": String(after) }, signal: opts.signal });
    const after = opts.after ?? 0;
    return new TaskEventStream(await open(after), open, after, opts.signal);
  }

  /** wait follows the task to its end and returns it as it ended. */
  async wait(id: string, opts: CallOptions = {}): Promise<api.Task> {
    for await (const _ of await this.follow(id, opts)) {
      // Only the end matters.
    }
    return this.get(id, opts);
  }

  /** artifacts lists the task's kept files and returns its workspace diff. */
  artifacts(id: string, opts: CallOptions = {}): Promise<api.TaskArtifactList> {
    return this.t.json("GET", taskPath(id, "/artifacts"), opts);
  }

  /** readArtifact streams one kept file (by its workspace path). */
  readArtifact(id: string, path: string, opts: CallOptions = {}): Promise<ByteStream> {
    return this.t.stream("GET", taskPath(id, "/artifacts"), { query: { path }, signal: opts.signal });
  }

  /** readDiff returns the task's workspace diff (git format, binary patches included). */
  readDiff(id: string, opts: CallOptions = {}): Promise<string> {
    return this.t.text("GET", taskPath(id, "/artifacts"), { query: { diff: 1 }, signal: opts.signal });
  }
}

/** TaskEventStream is a task's events as they come; `last` is the seq of the last one handed out. */
export class TaskEventStream implements AsyncIterable<api.TaskEvent> {
  last: number;
  private it?: AsyncGenerator<api.TaskEvent>;

  /** @internal */
  constructor(
    private body: ReadableStream<Uint8Array>,
    private readonly open: (after: number) => Promise<ReadableStream<Uint8Array>>,
    after: number,
    private readonly signal?: AbortSignal,
  ) {
    this.last = after;
  }

  [Symbol.asyncIterator](): AsyncGenerator<api.TaskEvent> {
    this.it ??= this.read();
    return this.it;
  }

  private async *read(): AsyncGenerator<api.TaskEvent> {
    let deadline = Date.now() + resumeFor;
    let wait = 100;
    for (;;) {
      let err: unknown;
      try {
        for await (const ev of sse(this.body)) {
          if (ev.type === "error") {
            const e = JSON.parse(ev.data) as { code: string; message: string };
            throw errorOf(0, e.code, e.message);
          }
          const e = JSON.parse(ev.data) as api.TaskEvent;
          this.last = e.seq;
          yield e;
          deadline = Date.now() + resumeFor;
          wait = 100;
          if (e.type === "task.finished") return;
        }
        err = new ConnectionError("the task's event stream ended before task.finished");
      } catch (e) {
        err = e;
      }
      const broken = err instanceof ConnectionError || err instanceof UnavailableError || (err instanceof AirlockError && (err.code === "unavailable" || err.status === 502));
      if (!broken || isAbort(err) || this.signal?.aborted || Date.now() > deadline) throw err;
      await sleep(wait, this.signal);
      wait = Math.min(2 * wait, 2000);
      try {
        this.body = await this.open(this.last);
      } catch (e) {
        this.body = new ReadableStream({ start: (c) => c.error(e) });
      }
    }
  }
}
