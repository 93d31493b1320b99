// What an operator does with an admin key: tenants, API keys, nodes and the
// server's own facts. (GET /v1/keys also answers other keys, for their own
// tenant.)
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

const enc = encodeURIComponent;

/** Administration of the server (admin keys; listKeys with any key). */
export class Admin {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** server returns the server's data dir, version and the agent protocols its sandboxes speak. */
  server(opts: CallOptions = {}): Promise<api.ServerInfo> {
    return this.t.json("GET", "/v1/server", opts);
  }

  /** createTenant creates a tenant (ConflictError if the name exists). */
  createTenant(req: api.TenantRequest, opts: CallOptions = {}): Promise<api.Tenant> {
    return this.t.json("POST", "/v1/tenants", { json: req, signal: opts.signal });
  }

  /** listTenants lists the tenants. */
  async listTenants(opts: CallOptions = {}): Promise<api.Tenant[]> {
    return (await this.t.json<api.TenantList>("GET", "/v1/tenants", opts)).tenants;
  }

  /** updateTenant changes a tenant's quotas (absent fields stay, 0 is unlimited). */
  updateTenant(name: string, quota: api.TenantQuotaUpdate, opts: CallOptions = {}): Promise<api.Tenant> {
    return this.t.json("PATCH", `/v1/tenants/${enc(name)}`, { json: quota, signal: opts.signal });
  }

  /** createKey makes an API key of a tenant; its secret (key) is shown only here. */
  createKey(req: api.KeyRequest, opts: CallOptions = {}): Promise<api.NewKey> {
    return this.t.json("POST", "/v1/keys", { json: req, signal: opts.signal });
  }

  /** listKeys lists API keys (an admin sees all, another key its tenant's), never their secrets. */
  async listKeys(opts: CallOptions = {}): Promise<api.Key[]> {
    return (await this.t.json<api.KeyList>("GET", "/v1/keys", opts)).keys;
  }

  /** deleteKey deletes an API key. */
  deleteKey(id: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", `/v1/keys/${enc(id)}`, opts);
  }

  /** createJoinToken makes a one-time token for a node to join with (airlock node join). */
  createJoinToken(req: api.JoinTokenRequest = {}, opts: CallOptions = {}): Promise<api.JoinToken> {
    return this.t.json("POST", "/v1/nodes/tokens", { json: req, signal: opts.signal });
  }

  /** listNodes lists the nodes that joined, by name. */
  async listNodes(opts: CallOptions = {}): Promise<api.Node[]> {
    return (await this.t.json<api.NodeList>("GET", "/v1/nodes", opts)).nodes;
  }

  /** getNode returns one node. */
  getNode(name: string, opts: CallOptions = {}): Promise<api.Node> {
    return this.t.json("GET", `/v1/nodes/${enc(name)}`, opts);
  }

  /** drainNode stops placing new sandboxes on a node (drain false: places on it again). */
  drainNode(name: string, drain = true, opts: CallOptions = {}): Promise<api.Node> {
    return this.t.json(drain ? "POST" : "DELETE", `/v1/nodes/${enc(name)}/drain`, opts);
  }

  /** deleteNode forgets a node; force fails the sandboxes it holds. */
  deleteNode(name: string, opts: CallOptions & { force?: boolean } = {}): Promise<void> {
    return this.t.empty("DELETE", `/v1/nodes/${enc(name)}`, { query: { force: opts.force || undefined }, signal: opts.signal });
  }
}
