// The HTTP side of the SDK: one server, one credential, the platform's
// fetch. Every non-2xx answer becomes an AirlockError of its code; nothing
// is retried on its own (an exec or an upload is not idempotent).
import { AirlockError, ConnectionError, errorFromBody } from "./errors.js";
import { brokeOff, isAbort } from "./sse.js";
import type { WebSocketFactory } from "./terminal.js";

/** What an upload or stdin takes: a stream is sent as it yields, never held whole. */
export type Body = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array>;

/**
 * A download: the platform's own type of a fetch body (whose Uint8Array is
 * generic in TypeScript 5.7 and later), so it pipes into the platform's
 * streams (DecompressionStream, a file) as it is.
 */
export type ByteStream = NonNullable<Response["body"]>;

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the request (and a stream it answered). */
  signal?: AbortSignal;
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface Call extends CallOptions {
  query?: Query;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (application/octet-stream unless headers say otherwise). */
  body?: Body;
  headers?: Record<string, string>;
}

export class Transport {
  constructor(
    readonly base: string,
    readonly apiKey: string | undefined,
    /** The platform's fetch (or the one AirlockOptions gave), called unbound. */
    readonly fetch: typeof globalThis.fetch,
    private readonly extra: Record<string, string>,
    readonly webSocket: WebSocketFactory | undefined,
  ) {}

  url(path: string, query?: Query): string {
    let u = this.base + path;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    }
    const s = q.toString();
    if (s) u += "?" + s;
    return u;
  }

  /** The headers every request carries: the caller's own, then the credential. */
  headers(): Record<string, string> {
    const h: Record<string, string> = { ...this.extra };
    if (this.apiKey) h["Authorization"] = `Bearer ${this.apiKey}`;
    return h;
  }

  /** send makes a request and returns its 2xx answer; any other is thrown as its AirlockError. */
  async send(method: string, path: string, call: Call = {}): Promise<Response> {
    const headers = { ...this.headers(), ...call.headers };
    const init: RequestInit & { duplex?: "half" } = { method, headers, signal: call.signal };
    if (call.json !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(call.json);
    } else if (call.body !== undefined) {
      headers["Content-Type"] ??= "application/octet-stream";
      init.body = call.body as BodyInit;
      // A stream goes out as it comes (fetch needs half duplex for it;
      // browsers stream request bodies over HTTP/2 only).
      if (typeof ReadableStream !== "undefined" && call.body instanceof ReadableStream) init.duplex = "half";
    }
    let res: Response;
    try {
      const f = this.fetch;
      res = await f(this.url(path, call.query), init);
    } catch (e) {
      if (isAbort(e) || e instanceof AirlockError) throw e;
      const cause = (e as { cause?: { message?: string } })?.cause?.message;
      throw new ConnectionError(`${method} ${path}: ${e instanceof Error ? e.message : String(e)}${cause ? ` (${cause})` : ""}`, { cause: e });
    }
    if (res.ok) return res;
    let text = "";
    try {
      text = await res.text();
    } catch {
      // The status alone says what went wrong.
    }
    throw errorFromBody(res.status, res.statusText, text);
  }

  async json<T>(method: string, path: string, call: Call = {}): Promise<T> {
    const res = await this.send(method, path, { ...call, headers: { Accept: "application/json", ...call.headers } });
    try {
      return (await res.json()) as T;
    } catch (e) {
      throw brokeOff(e instanceof SyntaxError ? new AirlockError(`decode the answer of ${method} ${path}: ${e.message}`, { status: res.status, cause: e }) : e);
    }
  }

  async empty(method: string, path: string, call: Call = {}): Promise<void> {
    const res = await this.send(method, path, call);
    await res.body?.cancel().catch(() => {});
  }

  async text(method: string, path: string, call: Call = {}): Promise<string> {
    const res = await this.send(method, path, call);
    try {
      return await res.text();
    } catch (e) {
      throw brokeOff(e);
    }
  }

  /** stream returns a 2xx answer's body, to be read (or cancelled) by the caller. */
  async stream(method: string, path: string, call: Call = {}): Promise<ByteStream> {
    const res = await this.send(method, path, call);
    return res.body ?? (new ReadableStream({ start: (c) => c.close() }) as ByteStream);
  }
}

/** sandboxPath is /v1/sandboxes/{id} and suffix, the id escaped so it cannot name another route ("../tenants"). */
export function sandboxPath(id: string, suffix = ""): string {
  return `/v1/sandboxes/${encodeURIComponent(id)}${suffix}`;
}

/** octal is the API's form of a mode: 0o644 → "0644"; a string passes as it is. */
export function octal(mode: number | string | undefined): string | undefined {
  if (mode === undefined || typeof mode === "string") return mode;
  return (mode & 0o777).toString(8).padStart(4, "0");
}

/** base64Bytes decodes base64 without Node's Buffer. */
export function base64Bytes(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** bytesBase64 encodes bytes as base64 without Node's Buffer. */
export function bytesBase64(b: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < b.length; i += 0x8000) bin += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(bin);
}
