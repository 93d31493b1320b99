package store

import (
	"database/sql"

	"github.com/airlockhq/airlock/internal/approvals"
)

// ApprovalCols are ScanApproval's columns.
const ApprovalCols = `id, tenant_id, sandbox_id, task, kind, request, state, requested_at, deadline,
	decided_at, decided_by, reason, remember`

// ScanApproval reads a row of ApprovalCols.
func ScanApproval(r Scanner) (approvals.Record, error) {
	var a approvals.Record
	var req, dl, dec sql.NullInt64
	if err := r.Scan(&a.ID, &a.TenantID, &a.SandboxID, &a.Task, &a.Kind, &a.Request, &a.State, &req, &dl,
		&dec, &a.DecidedBy, &a.Reason, &a.Remember); err != nil {
		return approvals.Record{}, NotFound(err)
	}
	a.RequestedAt, a.Deadline, a.DecidedAt = FromNanos(req), FromNanos(dl), FromNanos(dec)
	return a, nil
}

// ApprovalArgs are a's values in ApprovalCols' order.
func ApprovalArgs(a approvals.Record) []any {
	return []any{a.ID, a.TenantID, a.SandboxID, a.Task, a.Kind, a.Request, a.State, ToNanos(a.RequestedAt),
		ToNanos(a.Deadline), ToNanos(a.DecidedAt), a.DecidedBy, a.Reason, a.Remember}
}

// ApprovalsSchema is the table of approvals.Record, the same in both
// stores' migrations.
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
