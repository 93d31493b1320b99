// The API's errors as Error subclasses, one per code of its error JSON
// ({"error": {"code", "message"}}, docs/API.md "Errors"). The code decides
// the class; an answer without the API's JSON (a proxy's error page) is
// classed by its status.
import type { Error as ErrorBody } from "./types.gen.js";

/** A code of the API's error JSON. */
export type ErrorCode = ErrorBody["error"]["code"];

/**
 * An error answer of the server (or an error event in the middle of a
 * stream, whose status is 0). `code` is the API's code ("not_found", ...);
 * catch a kind with `instanceof NotFoundError` and the like.
 */
export class AirlockError extends Error {
  /** The HTTP status; 0 for an error event of a stream that had begun. */
  readonly status: number;
  /** The API's error code, or "" when the answer had none. */
  readonly code: string;

  constructor(message: string, opts: { status?: number; code?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.status = opts.status ?? 0;
    this.code = opts.code ?? "";
  }
}

/** invalid_argument (400, 413, 415): the message names the bad field or parameter. */
export class InvalidError extends AirlockError {}
/** unauthenticated (401): a missing, unknown, deleted or expired credential. */
export class UnauthorizedError extends AirlockError {}
/** forbidden (403): an admin route, or an API-key route called with a sandbox token. */
export class ForbiddenError extends AirlockError {}
/** not_found (404): no such object, or not the caller's. */
export class NotFoundError extends AirlockError {}
/** method_not_allowed (405). */
export class MethodNotAllowedError extends AirlockError {}
/** conflict (409). */
export class ConflictError extends AirlockError {}
/** paused (409): the call needs the sandbox running; resume it first. */
export class PausedError extends ConflictError {}
/** limit_exceeded (429): a tenant quota or the host's capacity. */
export class LimitExceededError extends AirlockError {}
/** pid_limit (429): the sandbox holds as many processes as its pids limit allows. */
export class PidLimitError extends LimitExceededError {}
/** storage_quota (429): the tenant keeps as much as its max_storage_mb allows. */
export class StorageQuotaError extends LimitExceededError {}
/** unavailable (503, 502, 504). */
export class UnavailableError extends AirlockError {}
/** low_disk (503): the server's data dir is short of free space. */
export class LowDiskError extends UnavailableError {}
/** internal (500): the details are in the server's log only. */
export class InternalError extends AirlockError {}
/** slow_consumer: the server dropped an event stream that fell too far behind; resume from the last id. */
export class StreamDroppedError extends AirlockError {}

/**
 * The connection failed or a stream broke off before its end: no answer
 * of the server's. `cause` holds what the platform's fetch or WebSocket
 * said.
 */
export class ConnectionError extends AirlockError {}

type ErrorClass = new (message: string, opts?: { status?: number; code?: string; cause?: unknown }) => AirlockError;

// Every code of the document has its class: a code added there fails to
// compile here until it has one.
const byCode: Record<ErrorCode, ErrorClass> = {
  invalid_argument: InvalidError,
  unauthenticated: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  conflict: ConflictError,
  paused: PausedError,
  limit_exceeded: LimitExceededError,
  pid_limit: PidLimitError,
  storage_quota: StorageQuotaError,
  unavailable: UnavailableError,
  low_disk: LowDiskError,
  internal: InternalError,
  slow_consumer: StreamDroppedError,
};

const byStatus: Record<number, ErrorClass> = {
  400: InvalidError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  405: MethodNotAllowedError,
  409: ConflictError,
  413: InvalidError,
  415: InvalidError,
  426: InvalidError,
  429: LimitExceededError,
  500: InternalError,
  502: UnavailableError,
  503: UnavailableError,
  504: UnavailableError,
};

/** errorOf makes the error of a code (preferred) or else of a status. */
export function errorOf(status: number, code: string, message: string): AirlockError {
  const cls = Object.hasOwn(byCode, code) ? byCode[code as ErrorCode] : byStatus[status] ?? AirlockError;
  return new cls(message || code.replaceAll("_", " ") || `HTTP ${status}`, { status, code });
}

/** errorFromBody reads a non-2xx answer's body into its error. */
export function errorFromBody(status: number, statusText: string, body: string): AirlockError {
  try {
    const parsed = JSON.parse(body) as Partial<ErrorBody>;
    if (parsed?.error && typeof parsed.error.code === "string" && (parsed.error.code as string) !== "") {
      return errorOf(status, parsed.error.code, String(parsed.error.message ?? ""));
    }
  } catch {
    // Not the API's JSON: a proxy's page, whose start becomes the message.
  }
  let msg = body.trim();
  if (msg.length > 200) msg = msg.slice(0, 200) + "...";
  return errorOf(status, "", msg || `${status} ${statusText}`.trim());
}
