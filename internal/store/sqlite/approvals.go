package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/store"
)

// CreateApproval: see store.Store.
func (s *Store) CreateApproval(ctx context.Context, a approvals.Record) error {
	if _, err := s.exec(ctx, `INSERT INTO approvals (`+store.ApprovalCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		store.ApprovalArgs(a)...); err != nil {
		return fmt.Errorf("create approval %s: %w", a.ID, err)
	}
	return nil
}

// GetApproval: see store.Store.
func (s *Store) GetApproval(ctx context.Context, tenantID, id string) (approvals.Record, error) {
	a, err := store.ScanApproval(s.queryRow(ctx, `SELECT `+store.ApprovalCols+` FROM approvals WHERE id = ? AND tenant_id = ?`, id, tenantID))
	if err != nil {
		return approvals.Record{}, fmt.Errorf("get approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals: see store.Store.
func (s *Store) ListApprovals(ctx context.Context, tenantID, state string) ([]approvals.Record, error) {
	q, args := `SELECT `+store.ApprovalCols+` FROM approvals WHERE tenant_id = ?`, []any{tenantID}
	if state != "" {
		q, args = q+` AND state = ?`, append(args, state)
	}
	rows, err := s.query(ctx, q+` ORDER BY requested_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	out, err := scanAll(rows, store.ScanApproval)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
}

// DecideApproval: see store.Store.
func (s *Store) DecideApproval(ctx context.Context, a approvals.Record) error {
	n, err := s.exec(ctx, `UPDATE approvals SET state = ?, decided_at = ?, decided_by = ?, reason = ?, remember = ?
		WHERE id = ? AND tenant_id = ? AND state = ?`,
		a.State, store.ToNanos(a.DecidedAt), a.DecidedBy, a.Reason, a.Remember, a.ID, a.TenantID, approvals.Pending)
	if err == nil && n == 0 {
		err = store.ErrNotFound
		if _, gerr := s.GetApproval(ctx, a.TenantID, a.ID); gerr == nil {
			err = store.ErrConflict
		} else if !errors.Is(gerr, store.ErrNotFound) {
			err = gerr
		}
	}
	if err != nil {
		return fmt.Errorf("decide approval %s: %w", a.ID, err)
	}
	return nil
}

// PruneApprovals: see store.Store.
func (s *Store) PruneApprovals(ctx context.Context, before time.Time) (int, error) {
	n, err := s.exec(ctx, `DELETE FROM approvals WHERE (state <> ? AND decided_at < ?) OR (state = ? AND deadline < ?)`,
		approvals.Pending, store.ToNanos(before), approvals.Pending, store.ToNanos(before))
	if err != nil {
		return 0, fmt.Errorf("prune approvals: %w", err)
	}
	return int(n), nil
}
