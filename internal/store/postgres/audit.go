package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
)

// AppendAudit adds linked events (audit.Link) to their sandboxes' logs
// and moves the heads, in one transaction, which also counts the events
// against their tenants' storage. It first locks the heads it will move
// (in sandbox order, so two appenders cannot deadlock): an appender in
// another process waits for this one to commit, and an event whose
// sequence number is taken is ErrConflict, as is the batch with it.
func (s *Store) AppendAudit(ctx context.Context, events []audit.Event) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append audit events", func(tx pgx.Tx, d delta) error {
		last := map[string]audit.Event{}
		capped := map[string]bool{}
		for _, e := range events {
			last[e.Sandbox] = e
			capped[e.Sandbox] = capped[e.Sandbox] || e.Type == audit.OutputCapped
		}
		ids := make([]string, 0, len(last))
		for id := range last {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if _, err := tx.Exec(ctx, `SELECT 1 FROM audit_heads WHERE sandbox_id = ANY($1::text[])
			ORDER BY sandbox_id FOR UPDATE`, ids); err != nil {
			return fmt.Errorf("append audit events: lock heads: %w", err)
		}
		b := &pgx.Batch{}
		for _, e := range events {
			b.Queue(`INSERT INTO audit_events (sandbox_id, seq, time, tenant_id, actor, type, data, prev, hash)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				e.Sandbox, e.Seq, store.ToNanos(e.Time), e.Tenant, e.Actor, e.Type, bytesOf(e.Data), e.Prev, e.Hash)
			d.add(e.Tenant, store.AuditEventBytes(e))
		}
		br := tx.SendBatch(ctx, b)
		for _, e := range events {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("append audit event %d of %s: %w", e.Seq, e.Sandbox, mapErr(err))
			}
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("append audit events: %w", mapErr(err))
		}
		for _, id := range ids {
			e := last[id]
			if _, err := tx.Exec(ctx, `INSERT INTO audit_heads (sandbox_id, tenant_id, seq, hash, time, output_capped)
				VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (sandbox_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
					output_capped = audit_heads.output_capped OR excluded.output_capped`,
				e.Sandbox, e.Tenant, e.Seq, e.Hash, store.ToNanos(e.Time), capped[id]); err != nil {
				return fmt.Errorf("move audit head of %s: %w", e.Sandbox, mapErr(err))
			}
		}
		return nil
	})
}

// AuditOutputCapped says whether the sandbox's log holds an
// audit.output_capped event.
func (s *Store) AuditOutputCapped(ctx context.Context, sandboxID string) (bool, error) {
	var capped bool
	err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT output_capped FROM audit_heads WHERE sandbox_id = $1), false)`,
		sandboxID).Scan(&capped)
	if err != nil {
		return false, fmt.Errorf("audit head of %s: %w", sandboxID, err)
	}
	return capped, nil
}

// AuditHead returns the newest event's sequence number and hash (0 and
// "" for a sandbox with no log).
func (s *Store) AuditHead(ctx context.Context, sandboxID string) (int64, string, error) {
	rows, err := query(ctx, s.pool, `SELECT seq, hash FROM audit_heads WHERE sandbox_id = $1`, []any{sandboxID},
		func(r store.Scanner) (audit.Event, error) {
			var e audit.Event
			return e, r.Scan(&e.Seq, &e.Hash)
		})
	if err != nil {
		return 0, "", fmt.Errorf("audit head of %s: %w", sandboxID, err)
	}
	if len(rows) == 0 {
		return 0, "", nil
	}
	return rows[0].Seq, rows[0].Hash, nil
}

// AuditEvents returns a sandbox's events in order, filtered.
func (s *Store) AuditEvents(ctx context.Context, sandboxID string, f store.AuditFilter) ([]audit.Event, error) {
	q := `SELECT sandbox_id, seq, time, tenant_id, actor, type, data, prev, hash FROM audit_events
		WHERE sandbox_id = $1 AND seq > $2`
	args := []any{sandboxID, f.AfterSeq}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(f.Types) > 0 {
		q += ` AND type = ANY(` + arg(f.Types) + `::text[])`
	}
	if !f.From.IsZero() {
		q += ` AND time >= ` + arg(store.ToNanos(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND time < ` + arg(store.ToNanos(f.To))
	}
	q += ` ORDER BY seq`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	out, err := query(ctx, s.pool, q, args, func(r store.Scanner) (audit.Event, error) {
		var e audit.Event
		var t sql.NullInt64
		var data []byte
		if err := r.Scan(&e.Sandbox, &e.Seq, &t, &e.Tenant, &e.Actor, &e.Type, &data, &e.Prev, &e.Hash); err != nil {
			return e, err
		}
		e.Time, e.Data = store.FromNanos(t), data
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit events of %s: %w", sandboxID, err)
	}
	return out, nil
}

// PruneAudit deletes the logs of sandboxes whose newest event is older
// than before, with their network logs, and returns how many logs went.
// It locks the heads it deletes, so an append to one of those logs in
// another process waits for it and then starts the log afresh.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int, error) {
	var n int
	err := s.storageTx(ctx, "prune audit", func(tx pgx.Tx, d delta) error {
		ids, err := query(ctx, tx, `DELETE FROM audit_heads WHERE sandbox_id IN
			(SELECT sandbox_id FROM audit_heads WHERE time < $1 ORDER BY sandbox_id FOR UPDATE)
			RETURNING sandbox_id`, []any{store.ToNanos(before)}, func(r store.Scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return fmt.Errorf("prune audit: %w", err)
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		for _, c := range []struct {
			table string
			row   int64
		}{{"audit_events", store.AuditRowBytes}, {"net_events", store.NetRowBytes}} {
			q := fmt.Sprintf(`WITH gone AS (DELETE FROM %s WHERE sandbox_id = ANY($1::text[]) RETURNING tenant_id, octet_length(data) AS b)
				SELECT tenant_id, (SUM(b) + COUNT(*) * %d)::bigint FROM gone GROUP BY tenant_id`, c.table, c.row)
			if err := d.addRows(ctx, tx, -1, q, ids); err != nil {
				return fmt.Errorf("prune audit: %s: %w", c.table, err)
			}
		}
		return nil
	})
	return n, err
}
