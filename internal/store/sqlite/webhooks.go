package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
)

// CreateWebhook inserts w; an existing ID is ErrConflict.
func (s *Store) CreateWebhook(ctx context.Context, w eventrec.Webhook) error {
	events, err := json.Marshal(w.Events)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO webhooks (`+store.WebhookCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
			w.ID, w.TenantID, w.URL, string(events), w.Sealed, store.ToNanos(w.CreatedAt))
	}
	if err != nil {
		return fmt.Errorf("create webhook %s of tenant %s: %w", w.ID, w.TenantID, err)
	}
	return nil
}

// GetWebhook returns the tenant's webhook with the id.
func (s *Store) GetWebhook(ctx context.Context, tenantID, id string) (eventrec.Webhook, error) {
	w, err := store.ScanWebhook(s.queryRow(ctx, `SELECT `+store.WebhookCols+` FROM webhooks WHERE id = ? AND tenant_id = ?`, id, tenantID))
	if err != nil {
		return eventrec.Webhook{}, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// ListWebhooks returns the tenant's webhooks ("" = every tenant's) in
// creation order.
func (s *Store) ListWebhooks(ctx context.Context, tenantID string) ([]eventrec.Webhook, error) {
	rows, err := s.query(ctx, `SELECT `+store.WebhookCols+` FROM webhooks
		WHERE ? = '' OR tenant_id = ? ORDER BY created_at, id`, tenantID, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of tenant %q: %w", tenantID, err)
	}
	out, err := scanAll(rows, store.ScanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of tenant %q: %w", tenantID, err)
	}
	return out, nil
}

// DeleteWebhook removes the tenant's webhook with its deliveries and their
// attempts, or returns ErrNotFound.
func (s *Store) DeleteWebhook(ctx context.Context, tenantID, id string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND tenant_id = ?`, id, tenantID)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete webhook %s: %w", id, store.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE delivery_id IN
		(SELECT id FROM webhook_deliveries WHERE webhook_id = ?)`, id); err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id); err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	s.writes.Add(1)
	return tx.Commit()
}

// DueDeliveries returns up to limit pending deliveries due at or before
// now, earliest first, each with its webhook and event.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]eventrec.Delivery, error) {
	rows, err := s.query(ctx, `SELECT `+store.DeliveryCols+`, w.url, w.sealed, w.created_at, e.sandbox_id, e.time, e.data
		FROM webhook_deliveries d
		JOIN webhooks w ON w.id = d.webhook_id
		JOIN tenant_events e ON e.id = d.event_id
		WHERE d.state = 'pending' AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`, store.ToNanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("due deliveries: %w", err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (eventrec.Delivery, error) {
		var wcreated, etime sql.NullInt64
		var data string
		var w eventrec.Webhook
		var e eventrec.Event
		d, err := store.ScanDelivery(r, &w.URL, &w.Sealed, &wcreated, &e.SandboxID, &etime, &data)
		if err != nil {
			return d, err
		}
		w.ID, w.TenantID, w.CreatedAt = d.WebhookID, d.TenantID, store.FromNanos(wcreated)
		e.ID, e.TenantID, e.Type, e.Time, e.Data = d.EventID, d.TenantID, d.EventType, store.FromNanos(etime), []byte(data)
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
	if err := s.queryRow(ctx, `SELECT MIN(next_at) FROM webhook_deliveries WHERE state = 'pending' AND next_at > ?`,
		from).Scan(&n); err != nil {
		return time.Time{}, fmt.Errorf("next delivery: %w", err)
	}
	return store.FromNanos(n), nil
}

// RecordAttempt saves attempt a of delivery d and d's new state, next
// attempt time, last status and error and end time, in one transaction;
// ErrNotFound if the delivery is gone (its webhook was deleted).
func (s *Store) RecordAttempt(ctx context.Context, d eventrec.Delivery, a eventrec.DeliveryAttempt) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", d.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = ?, next_at = ?,
		last_status = ?, last_error = ?, ended_at = ? WHERE id = ?`,
		d.State, d.Attempts, store.ToNanos(d.NextAt), d.LastStatus, d.LastError, store.ToNanos(d.EndedAt), d.ID)
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", d.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record attempt of %s: delivery %w", d.ID, store.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (delivery_id, n, time, status, error, duration_ms)
		VALUES (?, ?, ?, ?, ?, ?)`, d.ID, a.N, store.ToNanos(a.Time), a.Status, a.Error, a.DurationMS); err != nil {
		return fmt.Errorf("record attempt %d of %s: %w", a.N, d.ID, mapErr(err))
	}
	s.writes.Add(1)
	return tx.Commit()
}

// ListDeliveries returns up to limit of the tenant's webhook's deliveries
// for events below before (0: the newest), newest first, each with its
// attempts.
func (s *Store) ListDeliveries(ctx context.Context, tenantID, webhookID string, before int64, limit int) ([]eventrec.Delivery, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	// One read transaction, one snapshot: a delivery's state and its
	// attempts agree even while an attempt is being recorded.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("deliveries of webhook %s: %w", webhookID, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+store.DeliveryCols+` FROM webhook_deliveries d
		WHERE d.webhook_id = ? AND d.tenant_id = ? AND d.event_id < ? ORDER BY d.event_id DESC LIMIT ?`,
		webhookID, tenantID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("deliveries of webhook %s: %w", webhookID, err)
	}
	out, err := scanAll(rows, func(r store.Scanner) (eventrec.Delivery, error) { return store.ScanDelivery(r) })
	if err != nil || len(out) == 0 {
		if err != nil {
			err = fmt.Errorf("deliveries of webhook %s: %w", webhookID, err)
		}
		return out, err
	}
	byID := make(map[string]*eventrec.Delivery, len(out))
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	rows, err = tx.QueryContext(ctx, `SELECT a.delivery_id, a.n, a.time, a.status, a.error, a.duration_ms
		FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE d.webhook_id = ? AND d.event_id BETWEEN ? AND ? ORDER BY a.delivery_id, a.n`,
		webhookID, out[len(out)-1].EventID, out[0].EventID)
	if err != nil {
		return nil, fmt.Errorf("attempts of webhook %s: %w", webhookID, err)
	}
	type row struct {
		id string
		a  eventrec.DeliveryAttempt
	}
	attempts, err := scanAll(rows, func(r store.Scanner) (row, error) {
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
