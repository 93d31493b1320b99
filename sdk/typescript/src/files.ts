// A sandbox's files: uploads and downloads stream (ReadableStream), never
// held whole by the SDK.
import { brokeOff } from "./sse.js";
import { octal, sandboxPath, type Body, type ByteStream, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Files of one sandbox. Relative paths are under the sandbox's workdir (/home/user). */
export class Files {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /**
   * write creates or replaces the file at path with data, creating missing
   * parent directories; a ReadableStream is sent as it yields. mode is the
   * file's permissions (0o644 or "0644"; default 0644).
   */
  write(path: string, data: Body, opts: CallOptions & { mode?: number | string } = {}): Promise<api.WriteResult> {
    return this.t.json("PUT", sandboxPath(this.id, "/files"), { query: { path, mode: octal(opts.mode) }, body: data, signal: opts.signal });
  }

  /**
   * read returns the file's bytes as a stream, once the server has
   * answered (a missing file is a NotFoundError here). A file that
   * changes while it is read breaks the stream (ConnectionError) rather
   * than end short or long.
   */
  read(path: string, opts: CallOptions = {}): Promise<ByteStream> {
    return this.t.stream("GET", sandboxPath(this.id, "/files"), { query: { path }, signal: opts.signal });
  }

  /** readBytes reads the whole file into memory. */
  async readBytes(path: string, opts: CallOptions = {}): Promise<Uint8Array> {
    const res = await this.t.send("GET", sandboxPath(this.id, "/files"), { query: { path }, signal: opts.signal });
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw brokeOff(e);
    }
  }

  /** readText reads the whole file as UTF-8. */
  async readText(path: string, opts: CallOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.readBytes(path, opts));
  }

  /** list lists the directory at path. */
  async list(path: string, opts: CallOptions = {}): Promise<api.FileEntry[]> {
    const r = await this.t.json<api.FileList>("GET", sandboxPath(this.id, "/files"), { query: { path, list: 1 }, signal: opts.signal });
    return r.entries;
  }

  /** remove deletes the file or empty directory at path, or with recursive the directory and all in it. */
  remove(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    return this.t.empty("DELETE", sandboxPath(this.id, "/files"), { query: { path, recursive: opts.recursive ? 1 : undefined }, signal: opts.signal });
  }

  /** mkdir creates the directory path, and its missing parents (mode default 0755). */
  mkdir(path: string, opts: CallOptions & { mode?: number | string } = {}): Promise<void> {
    const body: api.Mkdir = { path };
    const mode = octal(opts.mode);
    if (mode !== undefined) body.mode = mode;
    return this.t.empty("POST", sandboxPath(this.id, "/files/mkdir"), { json: body, signal: opts.signal });
  }

  /** move renames from to to inside the sandbox. */
  move(from: string, to: string, opts: CallOptions = {}): Promise<void> {
    const body: api.Move = { from, to };
    return this.t.empty("POST", sandboxPath(this.id, "/files/move"), { json: body, signal: opts.signal });
  }
}
