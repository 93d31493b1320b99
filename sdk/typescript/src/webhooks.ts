// Webhooks: the tenant's events POSTed to a URL, signed and retried.
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** The tenant's webhooks. */
export class Webhooks {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** create registers a webhook; its secret is shown only in this answer. */
  create(req: api.WebhookRequest, opts: CallOptions = {}): Promise<api.Webhook> {
    return this.t.json("POST", "/v1/webhooks", { json: req, signal: opts.signal });
  }

  /** list lists the tenant's webhooks, without secrets. */
  async list(opts: CallOptions = {}): Promise<api.Webhook[]> {
    return (await this.t.json<api.WebhookList>("GET", "/v1/webhooks", opts)).webhooks;
  }

  /** delete deletes a webhook; its pending deliveries are not made. */
  delete(id: string, opts: CallOptions = {}): Promise<void> {
    return this.t.empty("DELETE", `/v1/webhooks/${encodeURIComponent(id)}`, opts);
  }

  /** deliveries returns a page of a webhook's deliveries, newest first. */
  async deliveries(id: string, query: api.Operations["webhookDeliveries"]["query"] = {}, opts: CallOptions = {}): Promise<api.Delivery[]> {
    return (await this.t.json<api.DeliveryList>("GET", `/v1/webhooks/${encodeURIComponent(id)}/deliveries`, { query, signal: opts.signal })).deliveries;
  }
}
