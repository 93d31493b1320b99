package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
)

// CreateWebhook inserts w; an existing ID is ErrConflict.
func (s *Store) CreateWebhook(ctx context.Context, w eventrec.Webhook) error {
	events, err := json.Marshal(w.Events)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO webhooks (`+store.WebhookCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			w.ID, w.TenantID, w.URL, string(events), bytesOf(w.Sealed), store.ToNanos(w.CreatedAt))
	}
	if err != nil {
		return fmt.Errorf("create webhook %s of tenant %s: %w", w.ID, w.TenantID, err)
	}
	return nil
}

// GetWebhook returns the tenant's webhook with the id.
func (s *Store) GetWebhook(ctx context.Context, tenantID, id string) (eventrec.Webhook, error) {
	w, err := store.ScanWebhook(s.pool.QueryRow(ctx, `SELECT `+store.WebhookCols+` FROM webhooks WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return eventrec.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// ListWebhooks returns the tenant's webhooks ("" = every tenant's) in
// creation order (NULLS FIRST: SQLite's order of a zero time).
func (s *Store) ListWebhooks(ctx context.Context, tenantID string) ([]eventrec.Webhook, error) {
	out, err := query(ctx, s.pool, `SELECT `+store.WebhookCols+` FROM webhooks
		WHERE $1 = '' OR tenant_id = $1 ORDER BY created_at NULLS FIRST, id`, []any{tenantID}, store.ScanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of tenant %q: %w", tenantID, err)
	}
	return out, nil
}

// DeleteWebhook removes the tenant's webhook with its deliveries and their
// attempts, or returns ErrNotFound.
func (s *Store) DeleteWebhook(ctx context.Context, tenantID, id string) error {
	return s.tx(ctx, "delete webhook "+id, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND tenant_id = $2`, id, tenantID)
		if err != nil {
			return fmt.Errorf("delete webhook %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("delete webhook %s: %w", id, store.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM webhook_deliveries WHERE webhook_id = $1 RETURNING id)
			DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone)`, id); err != nil {
			return fmt.Errorf("delete webhook %s: %w", id, err)
		}
		return nil
	})
}

// DueDeliveries returns up to limit pending deliveries due at or before
// now, earliest first, each with its webhook and event.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, n int) ([]eventrec.Delivery, error) {
	out, err := query(ctx, s.pool, `SELECT `+store.DeliveryCols+`, w.url, w.sealed, w.created_at, e.sandbox_id, e.time, e.data
		FROM webhook_deliveries d
		JOIN webhooks w ON w.id = d.webhook_id
		JOIN tenant_events e ON e.id = d.event_id
		WHERE d.state = 'pending' AND d.next_at <= $1 ORDER BY d.next_at, d.id LIMIT $2`, []any{store.ToNanos(now), limit(n)},
		func(r store.Scanner) (eventrec.Delivery, error) {
			var wcreated, etime sql.NullInt64
			var w eventrec.Webhook
			var e eventrec.Event
			d, err := store.ScanDelivery(r, &w.URL, &w.Sealed, &wcreated, &e.SandboxID, &etime, &e.Data)
			if err != nil {
				return d, err
			}
			w.ID, w.TenantID, w.CreatedAt = d.WebhookID, d.TenantID, store.FromNanos(wcreated)
			e.ID, e.TenantID, e.Type, e.Time = d.EventID, d.TenantID, d.EventType, store.FromNanos(etime)
			d.Webhook, d.Event = w, e
			return d, nil
		})
	if err != nil {
		return nil, fmt.Errorf("due deliveries: %w", err)
	}
	return out, nil
}

// NextDelivery returns the earliest time after after at which a pending
// delivery is due, zero if there is none.
func (s *Store) NextDelivery(ctx context.Context, after time.Time) (time.Time, error) {
	var n sql.NullInt64
	from := int64(math.MinInt64)
	if !after.IsZero() {
		from = after.UnixNano()
	}
	if err := s.pool.QueryRow(ctx, `SELECT MIN(next_at) FROM webhook_deliveries WHERE state = 'pending' AND next_at > $1`,
		from).Scan(&n); err != nil {
		return time.Time{}, fmt.Errorf("next delivery: %w", err)
	}
	return store.FromNanos(n), nil
}

// RecordAttempt saves attempt a of delivery d and d's new state in one
// transaction; ErrNotFound if the delivery is gone (its webhook was
// deleted), ErrConflict if the attempt's number is taken.
func (s *Store) RecordAttempt(ctx context.Context, d eventrec.Delivery, a eventrec.DeliveryAttempt) error {
	return s.tx(ctx, "record attempt of "+d.ID, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = $1, attempts = $2, next_at = $3,
			last_status = $4, last_error = $5, ended_at = $6 WHERE id = $7`,
			d.State, d.Attempts, store.ToNanos(d.NextAt), d.LastStatus, d.LastError, store.ToNanos(d.EndedAt), d.ID)
		if err != nil {
			return fmt.Errorf("record attempt of %s: %w", d.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("record attempt of %s: delivery %w", d.ID, store.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, n, time, status, error, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6)`, d.ID, a.N, store.ToNanos(a.Time), a.Status, a.Error, a.DurationMS); err != nil {
			return fmt.Errorf("record attempt %d of %s: %w", a.N, d.ID, mapErr(err))
		}
		return nil
	})
}

// ListDeliveries returns up to limit of the tenant's webhook's deliveries
// for events below before (0: the newest), newest first, each with its
// attempts.
func (s *Store) ListDeliveries(ctx context.Context, tenantID, webhookID string, before int64, n int) ([]eventrec.Delivery, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	// One snapshot for both queries: a delivery's state and its attempts
	// agree even while another replica records an attempt.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("deliveries of webhook %s: %w", webhookID, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	out, err := query(ctx, tx, `SELECT `+store.DeliveryCols+` FROM webhook_deliveries d
		WHERE d.webhook_id = $1 AND d.tenant_id = $2 AND d.event_id < $3 ORDER BY d.event_id DESC LIMIT $4`,
		[]any{webhookID, tenantID, before, limit(n)}, func(r store.Scanner) (eventrec.Delivery, error) { return store.ScanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("deliveries of webhook %s: %w", webhookID, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	byID := make(map[string]*eventrec.Delivery, len(out))
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	type row struct {
		id string
		a  eventrec.DeliveryAttempt
	}
	attempts, err := query(ctx, tx, `SELECT a.delivery_id, a.n, a.time, a.status, a.error, a.duration_ms
		FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE d.webhook_id = $1 AND d.event_id BETWEEN $2 AND $3 ORDER BY a.delivery_id, a.n`,
		[]any{webhookID, out[len(out)-1].EventID, out[0].EventID}, func(r store.Scanner) (row, error) {
			var x row
			var t sql.NullInt64
			err := r.Scan(&x.id, &x.a.N, &t, &x.a.Status, &x.a.Error, &x.a.DurationMS)
			x.a.Time = store.FromNanos(t)
			return x, err
		})
	if err != nil {
		return nil, fmt.Errorf("attempts of webhook %s: %w", webhookID, err)
	}
	for _, x := range attempts {
		if d := byID[x.id]; d != nil {
			d.History = append(d.History, x.a)
		}
	}
	return out, nil
}
