// Sessions: a bash kept between calls (cd, variables and a venv persist),
// driven by exec calls or through its terminal.
import { ConnectionError, NotFoundError } from "./errors.js";
import { openTerminal, type Terminal } from "./terminal.js";
import { sandboxPath, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** The sessions of one sandbox. */
export class Sessions {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /** create starts a session's shell (mode "exec" by default; "interactive" for a person at its terminal). */
  create(req: api.SessionRequest = {}, opts: CallOptions = {}): Promise<api.Session> {
    return this.t.json("POST", sandboxPath(this.id, "/sessions"), { json: req, signal: opts.signal });
  }

  /** list lists the sandbox's sessions. */
  async list(opts: CallOptions = {}): Promise<api.Session[]> {
    return (await this.t.json<api.SessionList>("GET", sandboxPath(this.id, "/sessions"), opts)).sessions;
  }

  /** exec runs command in the session's shell; after timeoutS (default 60) it gets ^C and the shell goes on. */
  exec(sessionId: string, command: string, opts: CallOptions & { timeoutS?: number } = {}): Promise<api.SessionExecResult> {
    const body: api.SessionExecRequest = { command };
    if (opts.timeoutS !== undefined) body.timeout_s = opts.timeoutS;
    return this.t.json("POST", this.path(sessionId, "/exec"), { json: body, signal: opts.signal });
  }

  /** delete ends the session's shell. */
  delete(sessionId: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", this.path(sessionId), opts);
  }

  /**
   * attach connects to the session's terminal (a WebSocket), from byte
   * opts.offset of its output on: the scrollback first, then live output.
   * A client that lost its connection passes its terminal's offset and
   * goes on where it was.
   */
  async attach(sessionId: string, opts: CallOptions & { offset?: number } = {}): Promise<Terminal> {
    const query = opts.offset ? { offset: opts.offset } : undefined;
    try {
      return await openTerminal(this.t, this.t.url(this.path(sessionId, "/attach"), query), opts.offset ?? 0, opts.signal);
    } catch (e) {
      // A browser's WebSocket does not say why a handshake was refused:
      // ask the API, whose answer does.
      if (!(e instanceof ConnectionError)) throw e;
      const sessions = await this.list(opts);
      if (!sessions.some((s) => s.id === sessionId)) throw new NotFoundError(`session ${JSON.stringify(sessionId)} not found`, { status: 404, code: "not_found", cause: e });
      throw e;
    }
  }

  /** cast is the session's terminal as an asciicast (v2), input included, built from the audit log. */
  cast(sessionId: string, opts: CallOptions = {}): Promise<string> {
    return this.t.text("GET", this.path(sessionId, "/cast"), opts);
  }

  private path(sid: string, suffix = ""): string {
    return sandboxPath(this.id, `/sessions/${encodeURIComponent(sid)}${suffix}`);
  }
}
