package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
)

// AppendNetEvents inserts events in one transaction, which also counts
// them against their tenants' storage.
func (s *Store) AppendNetEvents(ctx context.Context, events []store.NetEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append net events", func(tx *sql.Tx, d storageDelta) error {
		st, err := s.prepared(ctx, `INSERT INTO net_events (sandbox_id, tenant_id, time, data) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("append net events: %w", err)
		}
		txst := tx.StmtContext(ctx, st)
		for _, e := range events {
			if _, err := txst.ExecContext(ctx, e.SandboxID, e.TenantID, store.ToNanos(e.Time), string(e.Data)); err != nil {
				return fmt.Errorf("append net event of %s: %w", e.SandboxID, err)
			}
			d.add(e.TenantID, int64(len(e.Data))+store.NetRowBytes)
		}
		return nil
	})
}

// NetEvents returns a page of one sandbox's egress log.
func (s *Store) NetEvents(ctx context.Context, sandboxID string, after int64, limit int) ([]store.NetEvent, error) {
	rows, err := s.query(ctx, `SELECT id, sandbox_id, tenant_id, time, data FROM net_events
		WHERE sandbox_id = ? AND id > ? ORDER BY id LIMIT ?`, sandboxID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("net events of %s: %w", sandboxID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (store.NetEvent, error) {
		var e store.NetEvent
		var t sql.NullInt64
		var data string
		if err := r.Scan(&e.ID, &e.SandboxID, &e.TenantID, &t, &data); err != nil {
			return e, err
		}
		e.Time, e.Data = store.FromNanos(t), []byte(data)
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("net events of %s: %w", sandboxID, err)
	}
	return out, nil
}
