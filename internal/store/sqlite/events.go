package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
)

// eventsSchema holds the tenants' event streams and their webhooks: the
// subscriptions, one delivery per (webhook, event) and each attempt at it.
// A delivery is created in the same transaction as its event, so an event
// that is stored is never left undelivered by a crash.
const eventsSchema = `CREATE TABLE tenant_events (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		tenant_id  TEXT NOT NULL,
		sandbox_id TEXT NOT NULL,
		type       TEXT NOT NULL,
		time       INTEGER NOT NULL,
		data       TEXT NOT NULL
	);
	CREATE INDEX tenant_events_tenant ON tenant_events (tenant_id, id);
	CREATE INDEX tenant_events_time ON tenant_events (time);
	CREATE TABLE webhooks (
		id         TEXT PRIMARY KEY,
		tenant_id  TEXT NOT NULL,
		url        TEXT NOT NULL,
		events     TEXT NOT NULL,
		sealed     BLOB NOT NULL,
		created_at INTEGER
	);
	CREATE INDEX webhooks_tenant ON webhooks (tenant_id);
	CREATE TABLE webhook_deliveries (
		id          TEXT PRIMARY KEY,
		webhook_id  TEXT NOT NULL,
		tenant_id   TEXT NOT NULL,
		event_id    INTEGER NOT NULL,
		event_type  TEXT NOT NULL,
		state       TEXT NOT NULL,
		attempts    INTEGER NOT NULL,
		next_at     INTEGER,
		last_status INTEGER NOT NULL,
		last_error  TEXT NOT NULL,
		created_at  INTEGER,
		ended_at    INTEGER,
		UNIQUE (webhook_id, event_id)
	);
	CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_at);
	CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
	CREATE TABLE webhook_attempts (
		delivery_id TEXT NOT NULL,
		n           INTEGER NOT NULL,
		time        INTEGER NOT NULL,
		status      INTEGER NOT NULL,
		error       TEXT NOT NULL,
		duration_ms REAL NOT NULL,
		PRIMARY KEY (delivery_id, n)
	) WITHOUT ROWID;`

// AppendEvents stores events in one transaction, sets each one's ID,
// creates the deliveries each one lists, and counts the events against
// their tenants' storage.
func (s *Store) AppendEvents(ctx context.Context, events []eventrec.Event) error {
	if len(events) == 0 {
		return nil
	}
	return s.storageTx(ctx, "append events", func(tx *sql.Tx, d storageDelta) error {
		ins, err := s.prepared(ctx, `INSERT INTO tenant_events (tenant_id, sandbox_id, type, time, data) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		// Through a SELECT on webhooks, so a webhook deleted since the caller
		// looked gets no delivery rather than failing the whole batch.
		dl, err := s.prepared(ctx, `INSERT INTO webhook_deliveries
		(id, webhook_id, tenant_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at)
		SELECT ?, id, tenant_id, ?, ?, 'pending', 0, ?, 0, '', ? FROM webhooks WHERE id = ? AND tenant_id = ?`)
		if err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		insTx, dlTx := tx.StmtContext(ctx, ins), tx.StmtContext(ctx, dl)
		for i := range events {
			e := &events[i]
			res, err := insTx.ExecContext(ctx, e.TenantID, e.SandboxID, e.Type, store.ToNanos(e.Time), string(e.Data))
			if err != nil {
				return fmt.Errorf("append event of %s: %w", e.SandboxID, err)
			}
			if e.ID, err = res.LastInsertId(); err != nil {
				return fmt.Errorf("append event of %s: %w", e.SandboxID, err)
			}
			d.add(e.TenantID, int64(len(e.Data))+store.EventRowBytes)
			for _, d := range e.Deliveries {
				t := store.ToNanos(e.Time)
				if _, err := dlTx.ExecContext(ctx, d.ID, e.ID, e.Type, t, t, d.WebhookID, e.TenantID); err != nil {
					return fmt.Errorf("create delivery of event %d to %s: %w", e.ID, d.WebhookID, err)
				}
			}
		}
		return nil
	})
}

// TenantEvents returns up to limit of the tenant's events with an ID above
// after, oldest first; with types, only those.
func (s *Store) TenantEvents(ctx context.Context, tenantID string, after int64, types []string, limit int) ([]eventrec.Event, error) {
	q := `SELECT id, tenant_id, sandbox_id, type, time, data FROM tenant_events WHERE tenant_id = ? AND id > ?`
	args := []any{tenantID, after}
	if len(types) > 0 {
		q += ` AND type IN (?` + strings.Repeat(`, ?`, len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("events of tenant %s: %w", tenantID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (eventrec.Event, error) {
		var e eventrec.Event
		var t sql.NullInt64
		var data string
		if err := r.Scan(&e.ID, &e.TenantID, &e.SandboxID, &e.Type, &t, &data); err != nil {
			return e, err
		}
		e.Time, e.Data = store.FromNanos(t), []byte(data)
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("events of tenant %s: %w", tenantID, err)
	}
	return out, nil
}

// PruneEvents deletes the events older than before and all but the
// newest keep (keep <= 0: no count bound), except those a pending delivery
// still needs, and the finished deliveries that ended before before with
// their attempts. It returns how many events went.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, keep int) (int, error) {
	var n int64
	err := s.storageTx(ctx, "prune events", func(tx *sql.Tx, d storageDelta) error {
		cut := int64(-1)
		if keep > 0 {
			// IDs ascend without reuse, so the newest keep are above max-keep.
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) - ? FROM tenant_events`, keep).Scan(&cut); err != nil {
				return fmt.Errorf("prune events: %w", err)
			}
		}
		const old = `(time < ? OR id <= ?) AND id NOT IN (SELECT event_id FROM webhook_deliveries WHERE state = 'pending')`
		if err := d.addRows(ctx, tx, -1, fmt.Sprintf(`SELECT tenant_id, SUM(octet_length(data)) + COUNT(*) * %d
			FROM tenant_events WHERE %s GROUP BY tenant_id`, store.EventRowBytes, old), store.ToNanos(before), cut); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM tenant_events WHERE `+old, store.ToNanos(before), cut)
		if err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		n, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE delivery_id IN
			(SELECT id FROM webhook_deliveries WHERE state != 'pending' AND ended_at < ?)`, store.ToNanos(before)); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE state != 'pending' AND ended_at < ?`, store.ToNanos(before)); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		return nil
	})
	return int(n), err
}
