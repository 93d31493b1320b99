// Terminals: a WebSocket joined to a session's PTY. Binary messages carry
// terminal bytes both ways; text messages are JSON control messages
// (docs/API.md "Terminals"). The socket is the platform's: the `ws`
// package on Node when it is installed (it reports a refused handshake's
// status and error), else the global WebSocket (Node 22 and later take the
// Authorization header; browsers cannot send one, so there the console's
// session cookie must authenticate), or whatever AirlockOptions.webSocket
// makes.
import { AirlockError, ConnectionError, InvalidError, errorFromBody, errorOf } from "./errors.js";
import type { Transport } from "./transport.js";

/** The part of the WebSocket API the SDK uses: the browser's, undici's and ws's all have it. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | ArrayBufferLike | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  /** Set by a factory that can read a refused handshake's answer (the default one with ws does). */
  handshakeError?: AirlockError;
}

/** Makes a WebSocket to url that sends headers (the credential) with its handshake. */
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocketLike | Promise<WebSocketLike>;

/** How a terminal ended: its shell exited, or its session or sandbox went away. */
export interface TerminalEnd {
  exited: boolean;
  exitCode?: number;
  signal?: number;
  /** Why the session ended when the shell did not exit (deleted, its sandbox destroyed). */
  error?: AirlockError;
}

const maxCols = 1000;

/**
 * Terminal is a connection to a session's terminal. Iterate it with for
 * await to read output (the scrollback first, then what it prints next);
 * the iteration ends when the shell exits or the session goes, and `end`
 * says which. Breaking out of the loop detaches, as close() does. A lost
 * connection is a ConnectionError: attach again with `offset` to go on
 * without repeating anything. Several terminals may be attached to one
 * session.
 */
export class Terminal implements AsyncIterable<Uint8Array> {
  /** The terminal output bytes this terminal has handed out, counted from the session's start. */
  offset: number;
  /** Set once the terminal has ended. */
  end?: TerminalEnd;
  private readonly queue: Uint8Array[] = [];
  private failures: unknown[] = [];
  private closed = false;
  private wake?: () => void;
  private readonly opened: Promise<void>;

  /** @internal */
  constructor(
    private readonly ws: WebSocketLike,
    offset: number,
    signal?: AbortSignal,
  ) {
    this.offset = offset;
    ws.binaryType = "arraybuffer";
    this.opened = new Promise<void>((resolve, reject) => {
      const abort = () => {
        ws.close();
        reject(signal?.reason ?? new AirlockError("aborted"));
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener("abort", abort, { once: true });
      ws.onopen = () => {
        signal?.removeEventListener("abort", abort);
        resolve();
      };
      // A refused handshake is an error event, a close event or both
      // (undici's WebSocket fires only the error).
      const refused = (why: string) => {
        signal?.removeEventListener("abort", abort);
        this.closed = true;
        reject(ws.handshakeError ?? new ConnectionError(`the terminal's WebSocket did not open: ${why}`));
      };
      ws.onerror = (ev) => refused((ev as { message?: string })?.message || "error");
      ws.onclose = (ev) => refused(`closed (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`);
    });
    ws.onmessage = (ev) => this.message(ev.data);
  }

  /** @internal */
  async open(): Promise<this> {
    await this.opened;
    this.ws.onerror = () => {
      // The close event that follows says what happened.
    };
    this.ws.onclose = (ev) => {
      this.closed = true;
      if (!this.end && ev.code !== 1000) {
        this.failures.push(new ConnectionError(`the terminal's connection was lost (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ""}); attach again with offset ${this.offset}`));
      }
      this.wake?.();
    };
    return this;
  }

  /** write types data into the terminal (a string as UTF-8). */
  write(data: string | Uint8Array): void {
    this.ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  /** resize sets the terminal's size (1 to 1000 each way). */
  resize(cols: number, rows: number): void {
    for (const [what, n] of [["cols", cols], ["rows", rows]] as const) {
      if (!Number.isInteger(n) || n < 1 || n > maxCols) throw new InvalidError(`terminal ${what} ${n}: want 1 to ${maxCols}`, { code: "invalid_argument" });
    }
    this.ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  /** close detaches, leaving the shell running. */
  close(): void {
    if (!this.closed) this.ws.close(1000, "detached");
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: async () => {
        for (;;) {
          const failure = this.failures.shift();
          if (failure) throw failure;
          const data = this.queue.shift();
          if (data) {
            this.offset += data.length;
            return { value: data, done: false };
          }
          if (this.closed || this.end) return { value: undefined, done: true };
          await new Promise<void>((r) => (this.wake = r));
          this.wake = undefined;
        }
      },
      return: async () => {
        this.close();
        return { value: undefined, done: true };
      },
    };
  }

  private message(data: unknown): void {
    if (typeof data !== "string") {
      this.queue.push(new Uint8Array(data as ArrayBuffer));
      this.wake?.();
      return;
    }
    let m: { type?: string; exit_code?: number; signal?: number; code?: string; message?: string };
    try {
      m = JSON.parse(data);
    } catch (e) {
      this.failures.push(new AirlockError(`terminal: bad control message ${JSON.stringify(data.slice(0, 100))}`, { cause: e }));
      this.wake?.();
      return;
    }
    if (m.type === "exit") {
      this.end = { exited: true, exitCode: m.exit_code ?? 0, signal: m.signal ?? 0 };
    } else if (m.type === "error") {
      const err = errorOf(0, m.code ?? "", m.message ?? "");
      // An error about a message this client sent leaves the terminal
      // open; one about the session is followed by a close.
      if (m.code === "invalid_argument") this.failures.push(err);
      else this.end = { exited: false, error: err };
    }
    this.wake?.();
  }
}

/** openTerminal opens a terminal WebSocket to the http(s) url. */
export async function openTerminal(t: Transport, url: string, offset: number, signal?: AbortSignal): Promise<Terminal> {
  const wsURL = url.replace(/^http/, "ws");
  const ws = await (t.webSocket ?? defaultWebSocket)(wsURL, t.headers());
  return new Terminal(ws, offset, signal).open();
}

function isNode(): boolean {
  return typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string";
}

interface WsModule {
  WebSocket?: WsClass;
  default?: WsClass;
}
type WsClass = new (url: string, opts: { headers: Record<string, string>; maxPayload: number }) => WebSocketLike & {
  on(ev: "unexpected-response", fn: (req: unknown, res: WsResponse) => void): void;
  terminate(): void;
};
interface WsResponse {
  statusCode?: number;
  statusMessage?: string;
  setEncoding(enc: string): void;
  on(ev: "data", fn: (chunk: string) => void): void;
  on(ev: "end" | "error", fn: () => void): void;
}

// The module name is a variable so that bundlers for the browser do not
// try to resolve the Node-only package.
const wsPackage = "ws";

async function defaultWebSocket(url: string, headers: Record<string, string>): Promise<WebSocketLike> {
  const node = isNode();
  if (node) {
    let mod: WsModule | undefined;
    try {
      mod = (await import(/* webpackIgnore: true */ /* @vite-ignore */ wsPackage)) as WsModule;
    } catch {
      // Not installed: the global WebSocket below, if there is one.
    }
    const WS = mod?.WebSocket ?? mod?.default;
    if (WS) {
      const ws = new WS(url, { headers, maxPayload: 16 << 20 });
      // A refused handshake's answer is the API's error JSON: read it.
      ws.on("unexpected-response", (_req, res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c.length + body.length > 65536 ? "" : c));
        const done = () => {
          ws.handshakeError = errorFromBody(res.statusCode ?? 0, res.statusMessage ?? "", body);
          ws.terminate();
        };
        res.on("end", done);
        res.on("error", done);
      });
      return ws;
    }
  }
  const G = (globalThis as { WebSocket?: new (url: string, opts?: unknown) => WebSocketLike }).WebSocket;
  if (typeof G !== "function") {
    throw new AirlockError("no WebSocket for a terminal: on Node before 22 install the ws package (npm install ws), or pass {webSocket} to new Airlock()");
  }
  // Node's own WebSocket (undici) takes headers; a browser's cannot send
  // an Authorization header, so there the console's cookie authenticates.
  return node ? new G(url, { headers }) : new G(url);
}
