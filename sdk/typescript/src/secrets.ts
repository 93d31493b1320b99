// Secrets of the caller's tenant: their values go in and never come out;
// the egress proxy swaps them in on requests to their hosts.
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

function secretPath(name: string): string {
  return `/v1/secrets/${encodeURIComponent(name)}`;
}

/** The tenant's secrets. */
export class Secrets {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** create stores a secret (ConflictError if the name exists). */
  create(req: api.SecretRequest, opts: CallOptions = {}): Promise<api.Secret> {
    return this.t.json("POST", "/v1/secrets", { json: req, signal: opts.signal });
  }

  /** list lists the tenant's secrets, never their values. */
  async list(opts: CallOptions = {}): Promise<api.Secret[]> {
    return (await this.t.json<api.SecretList>("GET", "/v1/secrets", opts)).secrets;
  }

  /** rotate replaces a secret's value (and hosts, inject, body when given); bound sandboxes use it from their next request. */
  rotate(name: string, req: api.RotateSecret, opts: CallOptions = {}): Promise<api.Secret> {
    return this.t.json("PUT", secretPath(name), { json: req, signal: opts.signal });
  }

  /** delete deletes a secret. */
  delete(name: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", secretPath(name), opts);
  }
}
