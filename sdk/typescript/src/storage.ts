// What a tenant keeps beyond a sandbox's life: snapshots of sandboxes'
// files and volumes that sandboxes mount. (A snapshot is taken with
// Sandbox.snapshot; a sandbox starts from one with create({snapshot}).)
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** The tenant's snapshots. */
export class Snapshots {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** list lists the tenant's snapshots. */
  async list(opts: CallOptions = {}): Promise<api.Snapshot[]> {
    return (await this.t.json<api.SnapshotList>("GET", "/v1/snapshots", opts)).snapshots;
  }

  /** get returns one snapshot. */
  get(name: string, opts: CallOptions = {}): Promise<api.Snapshot> {
    return this.t.json("GET", `/v1/snapshots/${encodeURIComponent(name)}`, opts);
  }

  /** delete deletes a snapshot; sandboxes made from it keep their copy. */
  delete(name: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", `/v1/snapshots/${encodeURIComponent(name)}`, opts);
  }
}

/** The tenant's volumes. */
export class Volumes {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** create makes an empty volume. */
  create(req: api.VolumeRequest, opts: CallOptions = {}): Promise<api.Volume> {
    return this.t.json("POST", "/v1/volumes", { json: req, signal: opts.signal });
  }

  /** list lists the tenant's volumes. */
  async list(opts: CallOptions = {}): Promise<api.Volume[]> {
    return (await this.t.json<api.VolumeList>("GET", "/v1/volumes", opts)).volumes;
  }

  /** get returns one volume. */
  get(name: string, opts: CallOptions = {}): Promise<api.Volume> {
    return this.t.json("GET", `/v1/volumes/${encodeURIComponent(name)}`, opts);
  }

  /** delete deletes a volume and all it holds (ConflictError while a sandbox mounts it). */
  delete(name: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", `/v1/volumes/${encodeURIComponent(name)}`, opts);
  }
}
