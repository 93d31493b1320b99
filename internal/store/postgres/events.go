package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
)

// AppendEvents stores events in one transaction, sets each one's ID,
// creates the deliveries each one lists, and counts the events against
// their tenants' storage.
//
// IDs come from a sequence, which never hands one out twice, but two
// transactions may commit out of the order they drew in: a follower that
// had read up to 12 would then never see 11. So appenders queue on an
// advisory lock held to commit, and IDs become visible in order.
func (s *Store) AppendEvents(ctx context.Context, events []eventrec.Event) error {
	if len(events) == 0 {
		return nil
	}
	ids := make([]int64, len(events))
	err := s.storageTx(ctx, "append events", func(tx pgx.Tx, d delta) error {
		if err := lock(ctx, tx, lockTenantEvents); err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		for i := range events {
			e := &events[i]
			err := tx.QueryRow(ctx, `INSERT INTO tenant_events (tenant_id, sandbox_id, type, time, data)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`,
				e.TenantID, e.SandboxID, e.Type, store.ToNanos(e.Time), bytesOf(e.Data)).Scan(&ids[i])
			if err != nil {
				return fmt.Errorf("append event of %s: %w", e.SandboxID, mapErr(err))
			}
			d.add(e.TenantID, int64(len(e.Data))+store.EventRowBytes)
			for _, dl := range e.Deliveries {
				// Through a SELECT on webhooks, so a webhook deleted since
				// the caller looked gets no delivery rather than failing
				// the whole batch.
				t := store.ToNanos(e.Time)
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries
					(id, webhook_id, tenant_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at)
					SELECT $1, id, tenant_id, $2, $3, 'pending', 0, $4, 0, '', $4 FROM webhooks WHERE id = $5 AND tenant_id = $6`,
					dl.ID, ids[i], e.Type, t, dl.WebhookID, e.TenantID); err != nil {
					return fmt.Errorf("create delivery of event %d to %s: %w", ids[i], dl.WebhookID, mapErr(err))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Set only once committed: a failed append leaves the events as given.
	for i := range events {
		events[i].ID = ids[i]
	}
	return nil
}

// TenantEvents returns up to limit of the tenant's events with an ID above
// after, oldest first; with types, only those.
func (s *Store) TenantEvents(ctx context.Context, tenantID string, after int64, types []string, n int) ([]eventrec.Event, error) {
	q := `SELECT id, tenant_id, sandbox_id, type, time, data FROM tenant_events WHERE tenant_id = $1 AND id > $2`
	args := []any{tenantID, after, limit(n)}
	if len(types) > 0 {
		q += ` AND type = ANY($4::text[])`
		args = append(args, types)
	}
	q += ` ORDER BY id LIMIT $3`
	out, err := query(ctx, s.pool, q, args, func(r store.Scanner) (eventrec.Event, error) {
		var e eventrec.Event
		var t sql.NullInt64
		err := r.Scan(&e.ID, &e.TenantID, &e.SandboxID, &e.Type, &t, &e.Data)
		e.Time = store.FromNanos(t)
		return e, err
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
	var n int
	err := s.storageTx(ctx, "prune events", func(tx pgx.Tx, d delta) error {
		cut := int64(-1)
		if keep > 0 {
			// IDs ascend without reuse, so the newest keep are above max-keep.
			if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) - $1 FROM tenant_events`, keep).Scan(&cut); err != nil {
				return fmt.Errorf("prune events: %w", err)
			}
		}
		// What is counted is what the DELETE returns: exactly the rows
		// that went.
		rows, err := tx.Query(ctx, fmt.Sprintf(`WITH gone AS (DELETE FROM tenant_events
				WHERE (time < $1 OR id <= $2) AND id NOT IN (SELECT event_id FROM webhook_deliveries WHERE state = 'pending')
				RETURNING tenant_id, octet_length(data) AS b)
			SELECT tenant_id, COUNT(*), (SUM(b) + COUNT(*) * %d)::bigint FROM gone GROUP BY tenant_id`, store.EventRowBytes),
			store.ToNanos(before), cut)
		if err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		for rows.Next() {
			var tenant string
			var k, b int64
			if err := rows.Scan(&tenant, &k, &b); err != nil {
				rows.Close()
				return fmt.Errorf("prune events: %w", err)
			}
			n += int(k)
			d.add(tenant, -b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM webhook_deliveries WHERE state != 'pending' AND ended_at < $1 RETURNING id)
			DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone)`, store.ToNanos(before)); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		return nil
	})
	return n, err
}
