package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CreateApproval: see Store.
func (s *SQLite) CreateApproval(ctx context.Context, a Approval) error {
	if _, err := s.exec(ctx, `INSERT INTO approvals (`+ApprovalCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ApprovalArgs(a)...); err != nil {
		return fmt.Errorf("create approval %s: %w", a.ID, err)
	}
	return nil
}

// GetApproval: see Store.
func (s *SQLite) GetApproval(ctx context.Context, tenantID, id string) (Approval, error) {
	a, err := ScanApproval(s.queryRow(ctx, `SELECT `+ApprovalCols+` FROM approvals WHERE id = ? AND tenant_id = ?`, id, tenantID))
	if err != nil {
		return Approval{}, fmt.Errorf("get approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals: see Store.
func (s *SQLite) ListApprovals(ctx context.Context, tenantID, state string) ([]Approval, error) {
	q, args := `SELECT `+ApprovalCols+` FROM approvals WHERE tenant_id = ?`, []any{tenantID}
	if state != "" {
		q, args = q+` AND state = ?`, append(args, state)
	}
	rows, err := s.query(ctx, q+` ORDER BY requested_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out, err := scanAll(rows, ScanApproval)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
}

// DecideApproval: see Store.
func (s *SQLite) DecideApproval(ctx context.Context, a Approval) error {
	n, err := s.exec(ctx, `UPDATE approvals SET state = ?, decided_at = ?, decided_by = ?, reason = ?, remember = ?
		WHERE id = ? AND tenant_id = ? AND state = ?`,
		a.State, ToNanos(a.DecidedAt), a.DecidedBy, a.Reason, a.Remember, a.ID, a.TenantID, ApprovalPending)
	if err == nil && n == 0 {
		err = ErrNotFound
		if _, gerr := s.GetApproval(ctx, a.TenantID, a.ID); gerr == nil {
			err = ErrConflict
		} else if !errors.Is(gerr, ErrNotFound) {
			err = gerr
		}
	}
	if err != nil {
		return fmt.Errorf("decide approval %s: %w", a.ID, err)
	}
	return nil
}

// PruneApprovals: see Store.
func (s *SQLite) PruneApprovals(ctx context.Context, before time.Time) (int, error) {
	n, err := s.exec(ctx, `DELETE FROM approvals WHERE (state <> ? AND decided_at < ?) OR (state = ? AND deadline < ?)`,
		ApprovalPending, ToNanos(before), ApprovalPending, ToNanos(before))
	if err != nil {
		return 0, fmt.Errorf("prune approvals: %w", err)
	}
	return int(n), nil
}
