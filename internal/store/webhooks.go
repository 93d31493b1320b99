package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/events/eventrec"
)

// WebhookCols are the columns ScanWebhook reads.
const WebhookCols = `id, tenant_id, url, events, sealed, created_at`

// ScanWebhook reads a row of the webhook columns.
func ScanWebhook(r Scanner) (eventrec.Webhook, error) {
	var w eventrec.Webhook
	var events string
	var created sql.NullInt64
	if err := r.Scan(&w.ID, &w.TenantID, &w.URL, &events, &w.Sealed, &created); err != nil {
		return eventrec.Webhook{}, NotFound(err)
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return eventrec.Webhook{}, fmt.Errorf("webhook %s: decode events: %w", w.ID, err)
	}
	w.CreatedAt = FromNanos(created)
	return w, nil
}

// DeliveryCols are the columns ScanDelivery reads, of deliveries d.
const DeliveryCols = `d.id, d.webhook_id, d.tenant_id, d.event_id, d.event_type, d.state, d.attempts,
	d.next_at, d.last_status, d.last_error, d.created_at, d.ended_at`

// ScanDelivery reads a row of the delivery columns, then extra.
func ScanDelivery(r Scanner, extra ...any) (eventrec.Delivery, error) {
	var d eventrec.Delivery
	var next, created, ended sql.NullInt64
	dest := append([]any{&d.ID, &d.WebhookID, &d.TenantID, &d.EventID, &d.EventType, &d.State, &d.Attempts,
		&next, &d.LastStatus, &d.LastError, &created, &ended}, extra...)
	if err := r.Scan(dest...); err != nil {
		return eventrec.Delivery{}, err
	}
	d.NextAt, d.CreatedAt, d.EndedAt = FromNanos(next), FromNanos(created), FromNanos(ended)
	return d, nil
}
