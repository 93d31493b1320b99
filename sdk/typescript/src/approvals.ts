// Approvals: questions put to a person about a sandbox's action (a
// connection its policy asks about, something an agent asks to do, a
// harness's tool call). API keys only: a sandbox token gets a
// ForbiddenError, since an agent must not approve its own request.
import { sleep } from "./exec.js";
import type { CallOptions, Transport } from "./transport.js";
import type * as api from "./types.gen.js";

/** Which approvals to list. */
export type ApprovalListQuery = api.Operations["listApprovals"]["query"];

function approvalPath(id: string, suffix = ""): string {
  return `/v1/approvals/${encodeURIComponent(id)}${suffix}`;
}

/** The tenant's approvals. */
export class Approvals {
  /** @internal */
  constructor(private readonly t: Transport) {}

  /** list lists the tenant's approvals (query.state: pending, allowed, denied or timed_out), oldest first; a pending one past its deadline reads as timed_out. */
  async list(query: ApprovalListQuery = {}, opts: CallOptions = {}): Promise<api.Approval[]> {
    return (await this.t.json<api.ApprovalList>("GET", "/v1/approvals", { query, signal: opts.signal })).approvals;
  }

  /** get returns an approval. */
  get(id: string, opts: CallOptions = {}): Promise<api.Approval> {
    return this.t.json("GET", approvalPath(id), opts);
  }

  /**
   * decide allows or denies a pending approval and returns it decided
   * (ConflictError if it was decided, or timed out, already). remember
   * "sandbox" (or "task") also puts the target on the sandbox's allow
   * list, or deny list; reason goes to the audit log.
   */
  decide(id: string, req: api.ApprovalDecision, opts: CallOptions = {}): Promise<api.Approval> {
    return this.t.json("POST", approvalPath(id, "/decision"), { json: req, signal: opts.signal });
  }

  /**
   * wait returns the approval once it is pending no more: decided, or
   * timed out. It asks the server at most every opts.pollMs (default
   * 1000); since a pending approval past its deadline reads as
   * timed_out, it ends by the approval's deadline.
   */
  async wait(id: string, opts: CallOptions & { pollMs?: number } = {}): Promise<api.Approval> {
    let wait = 100;
    for (;;) {
      const a = await this.get(id, opts);
      if (a.state !== "pending") return a;
      await sleep(wait, opts.signal);
      wait = Math.min(2 * wait, opts.pollMs ?? 1000);
    }
  }
}
