// @airlockhq/sdk: the TypeScript SDK of Airlock's REST API (docs/API.md).
// It runs on Node 20 and later and in browsers, on the platform's fetch;
// uploads, downloads and output stream as they come and are never held
// whole. It never retries a request on its own: an exec or an upload is not
// idempotent.
export { Airlock, type AirlockOptions, type UsageQuery } from "./client.js";
export { Sandbox, Sandboxes, type SandboxInfo, type ListQuery } from "./sandbox.js";
export { ExecStream, OutputStream, type OutputChunk, type Command, type ExecRequest } from "./exec.js";
export { Files } from "./files.js";
export { Processes, Execs, type OutputOptions } from "./processes.js";
export { Sessions } from "./sessions.js";
export { Terminal, type TerminalEnd, type WebSocketFactory, type WebSocketLike } from "./terminal.js";
export { Network, type NetworkLogQuery } from "./network.js";
export { Audit, type AuditQuery } from "./audit.js";
export { EventStream, type EventsOptions } from "./events.js";
export { Tasks, TaskEventStream, type TaskListQuery } from "./tasks.js";
export { Secrets } from "./secrets.js";
export { Templates, type ImportOptions } from "./templates.js";
export { Snapshots, Volumes } from "./storage.js";
export { Webhooks } from "./webhooks.js";
export { Approvals, type ApprovalListQuery } from "./approvals.js";
export { Admin } from "./admin.js";
export type { Body, ByteStream, CallOptions } from "./transport.js";
export {
  AirlockError,
  ConnectionError,
  InvalidError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  ConflictError,
  PausedError,
  LimitExceededError,
  PidLimitError,
  StorageQuotaError,
  UnavailableError,
  LowDiskError,
  InternalError,
  StreamDroppedError,
  type ErrorCode,
} from "./errors.js";
// The API's own types, generated from its OpenAPI document (the
// Sandbox schema is SandboxInfo here: Sandbox is the handle). `schema`
// holds them all by their document names.
export type * from "./types.gen.js";
export type * as schema from "./types.gen.js";
