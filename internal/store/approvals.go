package store

import (
	"database/sql"
	"time"
)

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalAllowed  = "allowed"
	ApprovalDenied   = "denied"
	ApprovalTimedOut = "timed_out"
)

// Approval is a question put to a person about one sandbox's action: the
// durable record of package approvals' resource. The store keeps what is
// asked as opaque JSON (Request): the kinds and their fields are package
// approvals'.
type Approval struct {
	ID          string
	TenantID    string
	SandboxID   string
	Task        string // the sandbox's task, "" if none
	Kind        string
	Request     string // what is asked, as JSON
	State       string // ApprovalPending until decided or timed out
	RequestedAt time.Time
	Deadline    time.Time
	DecidedAt   time.Time // zero while pending
	DecidedBy   string    // the API key that decided, "" for a timeout
	Reason      string
	Remember    string
}

// ApprovalCols are ScanApproval's columns.
const ApprovalCols = `id, tenant_id, sandbox_id, task, kind, request, state, requested_at, deadline,
	decided_at, decided_by, reason, remember`

// ScanApproval reads a row of ApprovalCols.
func ScanApproval(r Scanner) (Approval, error) {
	var a Approval
	var req, dl, dec sql.NullInt64
	if err := r.Scan(&a.ID, &a.TenantID, &a.SandboxID, &a.Task, &a.Kind, &a.Request, &a.State, &req, &dl,
		&dec, &a.DecidedBy, &a.Reason, &a.Remember); err != nil {
		return Approval{}, NotFound(err)
	}
	a.RequestedAt, a.Deadline, a.DecidedAt = FromNanos(req), FromNanos(dl), FromNanos(dec)
	return a, nil
}

// ApprovalArgs are a's values in ApprovalCols' order.
func ApprovalArgs(a Approval) []any {
	return []any{a.ID, a.TenantID, a.SandboxID, a.Task, a.Kind, a.Request, a.State, ToNanos(a.RequestedAt),
		ToNanos(a.Deadline), ToNanos(a.DecidedAt), a.DecidedBy, a.Reason, a.Remember}
}

// ApprovalsSchema is the table of Approval, the same in both stores' migrations.
const ApprovalsSchema = `CREATE TABLE approvals (
		id           TEXT PRIMARY KEY,
		tenant_id    TEXT NOT NULL,
		sandbox_id   TEXT NOT NULL,
		task         TEXT NOT NULL DEFAULT '',
		kind         TEXT NOT NULL,
		request      TEXT NOT NULL,
		state        TEXT NOT NULL,
		requested_at BIGINT,
		deadline     BIGINT,
		decided_at   BIGINT,
		decided_by   TEXT NOT NULL DEFAULT '',
		reason       TEXT NOT NULL DEFAULT '',
		remember     TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX approvals_tenant_state ON approvals (tenant_id, state, requested_at);`
