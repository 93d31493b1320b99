// Templates: root file systems sandboxes are created from. Commits and
// image imports are admin-only.
import { AirlockError, errorOf } from "./errors.js";
import { events as sse } from "./sse.js";
import type { Body, Call, CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

function templatePath(name: string, suffix = ""): string {
  return `/v1/templates/${encodeURIComponent(name)}${suffix}`;
}

/** Options of a template commit or image import. */
export interface ImportOptions extends CallOptions {
  /** Called with each layer's progress of an image import (the answer is streamed then). */
  onProgress?: (p: api.ImageProgress) => void;
}

/** The server's templates. */
export class Templates {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** list lists the templates, base first. */
  async list(opts: CallOptions = {}): Promise<api.Template[]> {
    return (await this.t.json<api.Operations["listTemplates"]["response"]>("GET", "/v1/templates", opts)).templates;
  }

  /** get returns one template. */
  get(name: string, opts: CallOptions = {}): Promise<api.Template> {
    return this.t.json("GET", templatePath(name), opts);
  }

  /**
   * commit saves a template: a build sandbox's /usr/local (sandbox_id; the
   * sandbox is deleted), or an OCI or Docker image (image) pulled through
   * the egress proxy.
   */
  commit(req: api.CommitTemplate, opts: ImportOptions = {}): Promise<api.Template> {
    return this.imported("POST", "/v1/templates", { json: req }, opts);
  }

  /** uploadImage makes template name from a docker save or OCI layout tarball, streamed as it yields. */
  uploadImage(name: string, tarball: Body, opts: ImportOptions & { description?: string; filename?: string } = {}): Promise<api.Template> {
    return this.imported("PUT", templatePath(name, "/image"), {
      body: tarball,
      headers: { "Content-Type": "application/x-tar" },
      query: { description: opts.description, filename: opts.filename },
    }, opts);
  }

  /** delete removes a built template; sandboxes running on it keep it until they end. */
  delete(name: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", templatePath(name), opts);
  }

  private async imported(method: string, path: string, call: Call, opts: ImportOptions): Promise<api.Template> {
    if (!opts.onProgress) return this.t.json(method, path, { ...call, signal: opts.signal });
    const res = await this.t.send(method, path, { ...call, headers: { ...call.headers, Accept: "text/event-stream" }, signal: opts.signal });
    if (!(res.headers.get("Content-Type") ?? "").startsWith("text/event-stream")) return (await res.json()) as api.Template;
    for await (const ev of sse(res.body!)) {
      const data = JSON.parse(ev.data);
      if (ev.type === "progress") opts.onProgress(data as api.ImageProgress);
      else if (ev.type === "template") return data as api.Template;
      else if (ev.type === "error") throw errorOf(0, data.code, data.message);
    }
    throw new AirlockError("the import's stream ended before its template");
  }
}
