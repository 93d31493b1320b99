package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// LiveConn is a connection the daemon carries (through a sandbox's egress
// proxy, or into a sandbox's port) that was open when last written. One
// found at start was cut by the daemon's going away without a word (a
// kill -9, a crash), which the new daemon logs.
type LiveConn struct {
	ID        string
	SandboxID string
	Kind      string // "egress" or "port"
	OpenedAt  time.Time
	Data      []byte // the kind's JSON
}

const liveConnsSchema = `CREATE TABLE live_conns (
		id         TEXT PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		kind       TEXT NOT NULL,
		opened_at  INTEGER NOT NULL,
		data       BLOB NOT NULL
	) WITHOUT ROWID;`

// UpdateLiveConns adds the connections opened and removes those closed
// (by id), in one transaction.
func (s *SQLite) UpdateLiveConns(ctx context.Context, opened []LiveConn, closed []string) error {
	if len(opened) == 0 && len(closed) == 0 {
		return nil
	}
	return s.writeTx(ctx, "update live connections", func(tx *sql.Tx) error {
		for _, c := range opened {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO live_conns (id, sandbox_id, kind, opened_at, data)
				VALUES (?, ?, ?, ?, ?)`, c.ID, c.SandboxID, c.Kind, ToNanos(c.OpenedAt), c.Data); err != nil {
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
func (s *SQLite) TakeLiveConns(ctx context.Context) ([]LiveConn, error) {
	rows, err := s.query(ctx, `SELECT id, sandbox_id, kind, opened_at, data FROM live_conns ORDER BY opened_at`)
	if err != nil {
		return nil, fmt.Errorf("live connections: %w", err)
	}
	var out []LiveConn
	for rows.Next() {
		var c LiveConn
		var at sql.NullInt64
		if err := rows.Scan(&c.ID, &c.SandboxID, &c.Kind, &at, &c.Data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("live connections: %w", err)
		}
		c.OpenedAt = FromNanos(at)
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
