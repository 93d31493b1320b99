package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
)

const liveConnsSchema = `CREATE TABLE live_conns (
		id         TEXT PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		kind       TEXT NOT NULL,
		opened_at  INTEGER NOT NULL,
		data       BLOB NOT NULL
	) WITHOUT ROWID;`

// UpdateLiveConns adds the connections opened and removes those closed
// (by id), in one transaction.
func (s *Store) UpdateLiveConns(ctx context.Context, opened []store.LiveConn, closed []string) error {
	if len(opened) == 0 && len(closed) == 0 {
		return nil
	}
	return s.writeTx(ctx, "update live connections", func(tx *sql.Tx) error {
		for _, c := range opened {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO live_conns (id, sandbox_id, kind, opened_at, data)
				VALUES (?, ?, ?, ?, ?)`, c.ID, c.SandboxID, c.Kind, store.ToNanos(c.OpenedAt), c.Data); err != nil {
				return fmt.Errorf("connection %s: %w", c.ID, err)
			}
		}
		for _, id := range closed {
			if _, err := tx.ExecContext(ctx, `DELETE FROM live_conns WHERE id = ?`, id); err != nil {
				return fmt.Errorf("connection %s: %w", id, err)
			}
		}
		return nil
	})
}

// TakeLiveConns returns every connection left open and forgets them.
func (s *Store) TakeLiveConns(ctx context.Context) ([]store.LiveConn, error) {
	rows, err := s.query(ctx, `SELECT id, sandbox_id, kind, opened_at, data FROM live_conns ORDER BY opened_at`)
	if err != nil {
		return nil, fmt.Errorf("live connections: %w", err)
	}
	var out []store.LiveConn
	for rows.Next() {
		var c store.LiveConn
		var at sql.NullInt64
		if err := rows.Scan(&c.ID, &c.SandboxID, &c.Kind, &at, &c.Data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("live connections: %w", err)
		}
		c.OpenedAt = store.FromNanos(at)
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("live connections: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if _, err := s.exec(ctx, `DELETE FROM live_conns`); err != nil {
		return nil, fmt.Errorf("live connections: %w", err)
	}
	return out, nil
}
