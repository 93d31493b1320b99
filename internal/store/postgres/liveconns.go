package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/store"
)

// UpdateLiveConns adds the connections opened (replacing one with the
// same id) and removes those closed, in one transaction.
func (s *Store) UpdateLiveConns(ctx context.Context, opened []store.LiveConn, closed []string) error {
	if len(opened) == 0 && len(closed) == 0 {
		return nil
	}
	return s.tx(ctx, "update live connections", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, c := range opened {
			b.Queue(`INSERT INTO live_conns (id, sandbox_id, kind, opened_at, data) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET sandbox_id = excluded.sandbox_id, kind = excluded.kind,
					opened_at = excluded.opened_at, data = excluded.data`,
				c.ID, c.SandboxID, c.Kind, store.ToNanos(c.OpenedAt), bytesOf(c.Data))
		}
		if len(closed) > 0 {
			b.Queue(`DELETE FROM live_conns WHERE id = ANY($1::text[])`, closed)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("update live connections: %w", mapErr(err))
		}
		return nil
	})
}

// TakeLiveConns returns every connection left open and forgets them, in
// one statement: one written meanwhile is either returned or kept.
func (s *Store) TakeLiveConns(ctx context.Context) ([]store.LiveConn, error) {
	out, err := query(ctx, s.pool, `WITH gone AS (DELETE FROM live_conns RETURNING id, sandbox_id, kind, opened_at, data)
		SELECT * FROM gone ORDER BY opened_at, id`, nil, func(r store.Scanner) (store.LiveConn, error) {
		var c store.LiveConn
		var at sql.NullInt64
		err := r.Scan(&c.ID, &c.SandboxID, &c.Kind, &at, &c.Data)
		c.OpenedAt = store.FromNanos(at)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("live connections: %w", err)
	}
	return out, nil
}
