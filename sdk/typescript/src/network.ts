// A sandbox's egress: its policy and the log of what went through its proxy.
import { sandboxPath, type CallOptions, type Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Which entries of the network log to read. */
export type NetworkLogQuery = api.Operations["networkLog"]["query"];

/** The network of one sandbox. */
export class Network {
  /** @internal */
  constructor(
    private readonly t: Transport,
    private readonly id: string,
  ) {}

  /** get returns the sandbox's egress policy. */
  get(opts: CallOptions = {}): Promise<api.NetworkPolicy> {
    return this.t.json("GET", sandboxPath(this.id, "/network"), opts);
  }

  /** set replaces a running sandbox's egress policy; new connections follow it at once (API keys only). */
  set(policy: api.NetworkPolicy, opts: CallOptions = {}): Promise<api.NetworkPolicy> {
    return this.t.json("PUT", sandboxPath(this.id, "/network"), { json: policy, signal: opts.signal });
  }

  /** log returns entries of the egress log with a seq above query.after, oldest first. */
  async log(query: NetworkLogQuery = {}, opts: CallOptions = {}): Promise<api.NetEvent[]> {
    return (await this.t.json<api.NetEventList>("GET", sandboxPath(this.id, "/network/log"), { query, signal: opts.signal })).events;
  }
}
