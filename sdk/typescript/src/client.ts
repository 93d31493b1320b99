// Airlock is the SDK's entry point: one server, one credential.
import { Admin } from "./admin.js";
import { Approvals } from "./approvals.js";
import { AirlockError } from "./errors.js";
import { openEvents, type EventStream, type EventsOptions } from "./events.js";
import { Sandbox, Sandboxes, fetchWith } from "./sandbox.js";
import { Secrets } from "./secrets.js";
import { Snapshots, Volumes } from "./storage.js";
import { Tasks } from "./tasks.js";
import { Templates } from "./templates.js";
import type { WebSocketFactory } from "./terminal.js";
import { Transport, type CallOptions } from "./transport.js";
import type * as api from "./types.gen.js";
import { Webhooks } from "./webhooks.js";

/** How to reach the server. */
export interface AirlockOptions {
  /**
   * The server's URL ("http://127.0.0.1:7070"). Default: $AIRLOCK_URL on
   * Node, the page's own origin in a browser.
   */
  url?: string;
  /**
   * An API key ("alk_...") or a sandbox token ("alt_..."). Default:
   * $AIRLOCK_API_KEY on Node; in a browser without one, the console's
   * session cookie authenticates.
   */
  apiKey?: string;
  /** The fetch to use (default the platform's). */
  fetch?: typeof fetch;
  /** Makes terminals' WebSockets (default: ws on Node when installed, else the global WebSocket). */
  webSocket?: WebSocketFactory;
  /** Headers added to every request. */
  headers?: Record<string, string>;
}

/** The usage window of Airlock.usage: RFC 3339 times or Dates; tenant for an admin key. */
export interface UsageQuery {
  from?: string | Date;
  to?: string | Date;
  tenant?: string;
}

/** env reads a variable of Node's environment, where there is one. */
function env(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

/**
 * Airlock talks to one Airlock server with one credential. It is cheap to
 * make and holds no connection of its own.
 *
 *     const airlock = new Airlock({ url, apiKey });
 *     const sandbox = await airlock.sandboxes.create();
 *     const { stdout } = await sandbox.exec("echo hello");
 */
export class Airlock {
  /** The server's URL, without a trailing slash. */
  readonly url: string;
  readonly sandboxes: Sandboxes;
  readonly secrets: Secrets;
  readonly templates: Templates;
  readonly tasks: Tasks;
  readonly snapshots: Snapshots;
  readonly volumes: Volumes;
  readonly webhooks: Webhooks;
  /** Questions put to a person about a sandbox's action (API keys only). */
  readonly approvals: Approvals;
  /** Tenants, keys, nodes and the server's facts (admin keys). */
  readonly admin: Admin;
  private readonly t: Transport;

  constructor(opts: AirlockOptions = {}) {
    const url = opts.url ?? env("AIRLOCK_URL") ?? (globalThis as { location?: { origin?: string } }).location?.origin;
    if (!url) throw new AirlockError("no server URL: pass {url} or set AIRLOCK_URL");
    this.url = url.replace(/\/+$/, "");
    const f = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
    this.t = new Transport(this.url, opts.apiKey ?? env("AIRLOCK_API_KEY"), f, opts.headers ?? {}, opts.webSocket);
    this.sandboxes = new Sandboxes(this.t);
    this.secrets = new Secrets(this.t);
    this.templates = new Templates(this.t);
    this.tasks = new Tasks(this.t);
    this.snapshots = new Snapshots(this.t);
    this.volumes = new Volumes(this.t);
    this.webhooks = new Webhooks(this.t);
    this.approvals = new Approvals(this.t);
    this.admin = new Admin(this.t);
  }

  /** sandbox is a handle on sandbox id, without asking the server (refresh() does). */
  sandbox(id: string): Sandbox {
    return new Sandbox(this.t, id);
  }

  /** health resolves when the server answers GET /healthz. */
  health(opts: CallOptions = {}): Promise<api.Health> {
    return this.t.json("GET", "/healthz", opts);
  }

  /** ready resolves when the server takes API calls (UnavailableError while a replica knows no leader). */
  ready(opts: CallOptions = {}): Promise<api.Health> {
    return this.t.json("GET", "/readyz", opts);
  }

  /** openAPI returns the server's OpenAPI 3.1 document. */
  openAPI(opts: CallOptions = {}): Promise<Record<string, unknown>> {
    return this.t.json("GET", "/v1/openapi.json", opts);
  }

  /** auditKey returns the public key that signs the server's audit exports. */
  auditKey(opts: CallOptions = {}): Promise<api.Operations["auditKey"]["response"]> {
    return this.t.json("GET", "/v1/audit/key", opts);
  }

  /**
   * usage sums, per tenant, the usage of the sandboxes created in
   * [from, to). An admin key sees every tenant (or tenant); any other key
   * its own.
   */
  usage(q: UsageQuery = {}, opts: CallOptions = {}): Promise<api.UsageReport> {
    const time = (v?: string | Date) => (v instanceof Date ? v.toISOString() : v);
    return this.t.json("GET", "/v1/usage", { query: { from: time(q.from), to: time(q.to), tenant: q.tenant }, signal: opts.signal });
  }

  /** prometheusMetrics returns the server's Prometheus text (admin keys). */
  prometheusMetrics(opts: CallOptions = {}): Promise<string> {
    return this.t.text("GET", "/metrics", opts);
  }

  /**
   * events follows the tenant's event stream. It resolves once the
   * stream is live, so an event of anything done after it is not missed;
   * iterate the answer with for await.
   */
  events(opts: EventsOptions = {}): Promise<EventStream> {
    return openEvents(this.t, opts);
  }

  /** fetch sends any request to the server with this client's credential and returns the answer as it is. */
  fetch(path: string, init: RequestInit = {}): Promise<Response> {
    return fetchWith(this.t, this.url + path, init);
  }
}
