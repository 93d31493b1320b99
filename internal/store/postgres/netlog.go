package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/store"
)

// AppendNetEvents inserts events in one transaction, which also counts
// them against their tenants' storage. Appenders queue on an advisory
// lock, so IDs commit in ascending order: a reader paging with "after
// id" never finds a smaller one committed later.
func (s *Store) AppendNetEvents(ctx context.Context, events []store.NetEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append net events", func(tx pgx.Tx, d delta) error {
		if err := lock(ctx, tx, lockNetEvents); err != nil {
			return fmt.Errorf("append net events: %w", err)
		}
		b := &pgx.Batch{}
		for _, e := range events {
			b.Queue(`INSERT INTO net_events (sandbox_id, tenant_id, time, data) VALUES ($1, $2, $3, $4)`,
				e.SandboxID, e.TenantID, store.ToNanos(e.Time), bytesOf(e.Data))
			d.add(e.TenantID, int64(len(e.Data))+store.NetRowBytes)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("append net events: %w", mapErr(err))
		}
		return nil
	})
}

// NetEvents returns a page of one sandbox's egress log.
func (s *Store) NetEvents(ctx context.Context, sandboxID string, after int64, n int) ([]store.NetEvent, error) {
	out, err := query(ctx, s.pool, `SELECT id, sandbox_id, tenant_id, time, data FROM net_events
		WHERE sandbox_id = $1 AND id > $2 ORDER BY id LIMIT $3`, []any{sandboxID, after, limit(n)},
		func(r store.Scanner) (store.NetEvent, error) {
			var e store.NetEvent
			var t sql.NullInt64
			err := r.Scan(&e.ID, &e.SandboxID, &e.TenantID, &t, &e.Data)
			e.Time = store.FromNanos(t)
			return e, err
		})
	if err != nil {
		return nil, fmt.Errorf("net events of %s: %w", sandboxID, err)
	}
	return out, nil
}

// bytesOf is b for a NOT NULL bytea column: nil is stored as empty.
func bytesOf(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
