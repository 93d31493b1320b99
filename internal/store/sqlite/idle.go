package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/store"
)

// SaveIdle records when each sandbox was last used.
func (s *Store) SaveIdle(ctx context.Context, last map[string]time.Time) error {
	if len(last) == 0 {
		return nil
	}
	return s.writeTx(ctx, "save idle timers", func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE sandboxes SET idle_since = ? WHERE id = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for id, t := range last {
			if _, err := st.ExecContext(ctx, store.ToNanos(t), id); err != nil {
				return fmt.Errorf("sandbox %s: %w", id, err)
			}
		}
		return nil
	})
}

// IdleSince returns the saved last use of each live sandbox that has one.
func (s *Store) IdleSince(ctx context.Context) (map[string]time.Time, error) {
	if err := s.flushSandboxes(ctx); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT id, idle_since FROM sandboxes
		WHERE state IN ('creating', 'running') AND idle_since IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("idle timers: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at sql.NullInt64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("idle timers: %w", err)
		}
		out[id] = store.FromNanos(at)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("idle timers: %w", err)
	}
	return out, nil
}
