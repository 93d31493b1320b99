package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
)

// auditSchema holds every sandbox's audit log and, per sandbox, its head:
// the newest event's sequence number and hash, written in the same
// transaction, so a log cut short at its end is caught by verification.
const auditSchema = `CREATE TABLE audit_events (
		sandbox_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		time INTEGER NOT NULL,
		tenant_id TEXT NOT NULL,
		actor TEXT NOT NULL,
		type TEXT NOT NULL,
		data TEXT NOT NULL,
		prev TEXT NOT NULL,
		hash TEXT NOT NULL,
		PRIMARY KEY (sandbox_id, seq)
	) WITHOUT ROWID;
	CREATE INDEX audit_events_time ON audit_events (time);
	CREATE TABLE audit_heads (
		sandbox_id TEXT PRIMARY KEY,
		tenant_id TEXT NOT NULL,
		seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		time INTEGER NOT NULL
	);`

// AppendAudit adds linked events (audit.Link) to their sandboxes' logs
// and moves the heads, in one transaction, which also counts the events
// against their tenants' storage.
func (s *Store) AppendAudit(ctx context.Context, events []audit.Event) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append audit events", func(tx *sql.Tx, d storageDelta) error {
		ins, err := s.prepared(ctx, `INSERT INTO audit_events (sandbox_id, seq, time, tenant_id, actor, type, data, prev, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("append audit events: %w", err)
		}
		head, err := s.prepared(ctx, `INSERT INTO audit_heads (sandbox_id, tenant_id, seq, hash, time, output_capped) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (sandbox_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time,
			output_capped = max(output_capped, excluded.output_capped)`)
		if err != nil {
			return fmt.Errorf("append audit events: %w", err)
		}
		insTx, headTx := tx.StmtContext(ctx, ins), tx.StmtContext(ctx, head)
		last := map[string]audit.Event{}
		capped := map[string]bool{}
		for _, e := range events {
			if _, err := insTx.ExecContext(ctx, e.Sandbox, e.Seq, store.ToNanos(e.Time), e.Tenant, e.Actor, e.Type, string(e.Data), e.Prev, e.Hash); err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return fmt.Errorf("append audit event %d of %s: %w", e.Seq, e.Sandbox, store.ErrConflict)
				}
				return fmt.Errorf("append audit event %d of %s: %w", e.Seq, e.Sandbox, err)
			}
			last[e.Sandbox] = e
			capped[e.Sandbox] = capped[e.Sandbox] || e.Type == audit.OutputCapped
			d.add(e.Tenant, store.AuditEventBytes(e))
		}
		for _, e := range last {
			if _, err := headTx.ExecContext(ctx, e.Sandbox, e.Tenant, e.Seq, e.Hash, store.ToNanos(e.Time), capped[e.Sandbox]); err != nil {
				return fmt.Errorf("move audit head of %s: %w", e.Sandbox, err)
			}
		}
		return nil
	})
}

// AuditOutputCapped says whether the sandbox's log holds an
// audit.output_capped event: its output is no longer recorded.
func (s *Store) AuditOutputCapped(ctx context.Context, sandboxID string) (bool, error) {
	var capped bool
	err := s.queryRow(ctx, `SELECT output_capped FROM audit_heads WHERE sandbox_id = ?`, sandboxID).Scan(&capped)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit head of %s: %w", sandboxID, err)
	}
	return capped, nil
}

// AuditHead returns the newest event's sequence number and hash (0 and
// "" for a sandbox with no log).
func (s *Store) AuditHead(ctx context.Context, sandboxID string) (int64, string, error) {
	var seq int64
	var hash string
	err := s.queryRow(ctx, `SELECT seq, hash FROM audit_heads WHERE sandbox_id = ?`, sandboxID).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("audit head of %s: %w", sandboxID, err)
	}
	return seq, hash, nil
}

// AuditEvents returns a sandbox's events in order, filtered.
func (s *Store) AuditEvents(ctx context.Context, sandboxID string, f store.AuditFilter) ([]audit.Event, error) {
	q := `SELECT sandbox_id, seq, time, tenant_id, actor, type, data, prev, hash FROM audit_events
		WHERE sandbox_id = ? AND seq > ?`
	args := []any{sandboxID, f.AfterSeq}
	if len(f.Types) > 0 {
		q += ` AND type IN (?` + strings.Repeat(`, ?`, len(f.Types)-1) + `)`
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	if !f.From.IsZero() {
		q += ` AND time >= ?`
		args = append(args, store.ToNanos(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND time < ?`
		args = append(args, store.ToNanos(f.To))
	}
	q += ` ORDER BY seq`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit events of %s: %w", sandboxID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (audit.Event, error) {
		var e audit.Event
		var t sql.NullInt64
		var data string
		if err := r.Scan(&e.Sandbox, &e.Seq, &t, &e.Tenant, &e.Actor, &e.Type, &data, &e.Prev, &e.Hash); err != nil {
			return e, err
		}
		e.Time, e.Data = store.FromNanos(t), []byte(data)
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit events of %s: %w", sandboxID, err)
	}
	return out, nil
}

// PruneAudit deletes the logs of sandboxes whose newest event is older
// than before, with their network logs, and returns how many logs went.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.storageTx(ctx, "prune audit", func(tx *sql.Tx, d storageDelta) error {
		cut := store.ToNanos(before)
		const old = `sandbox_id IN (SELECT sandbox_id FROM audit_heads WHERE time < ?)`
		for _, q := range []string{
			fmt.Sprintf(`SELECT tenant_id, SUM(octet_length(data)) + COUNT(*) * %d FROM audit_events WHERE %s GROUP BY tenant_id`, store.AuditRowBytes, old),
			fmt.Sprintf(`SELECT tenant_id, SUM(octet_length(data)) + COUNT(*) * %d FROM net_events WHERE %s GROUP BY tenant_id`, store.NetRowBytes, old),
		} {
			if err := d.addRows(ctx, tx, -1, q, cut); err != nil {
				return fmt.Errorf("prune audit: %w", err)
			}
		}
		for _, q := range []string{`DELETE FROM audit_events WHERE ` + old, `DELETE FROM net_events WHERE ` + old} {
			if _, err := tx.ExecContext(ctx, q, cut); err != nil {
				return fmt.Errorf("prune audit: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM audit_heads WHERE time < ?`, cut)
		if err != nil {
			return fmt.Errorf("prune audit: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
