// Package eventrec holds package events' records as the stores keep
// them (a tenant's event, a webhook, a delivery and its attempts) and the
// methods that keep them (Store). Package events owns them and persists
// them through its narrow events.Store, which is this Store; store.Store
// has it too, and store/sqlite and store/postgres implement it. It is a
// leaf apart from events because events imports store: store importing
// events would be a cycle. It must never import anything of Airlock's.
package eventrec

import (
	"context"
	"time"
)

// Event is one entry of a tenant's event stream (GET /v1/events,
// webhooks). Data is JSON, opaque to the stores.
type Event struct {
	ID        int64 // assigned by AppendEvents, ascending, never reused
	TenantID  string
	SandboxID string
	Type      string
	Time      time.Time
	Data      []byte
	// Deliveries are created with the event, in the same transaction:
	// one pending delivery per entry, due at once. Only ID and WebhookID
	// are read; a delivery to a webhook deleted meanwhile is skipped. They
	// are never read back with the event.
	Deliveries []Delivery
}

// Webhook is a tenant's subscription to its events. Sealed is its signing
// secret encrypted by package secrets.
type Webhook struct {
	ID        string
	TenantID  string
	URL       string
	Events    []string // event types; "*" is every type
	Sealed    []byte
	CreatedAt time.Time
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up
)

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID         string
	WebhookID  string
	TenantID   string
	EventID    int64
	EventType  string // read only
	State      string
	Attempts   int
	NextAt     time.Time // pending: when the next attempt is due
	LastStatus int       // HTTP status of the last attempt, 0 if none came
	LastError  string
	CreatedAt  time.Time
	EndedAt    time.Time         // delivered or given up
	History    []DeliveryAttempt // filled by ListDeliveries, oldest first
	Webhook    Webhook           // filled by DueDeliveries
	Event      Event             // filled by DueDeliveries
}

// DeliveryAttempt is one try at a delivery.
type DeliveryAttempt struct {
	N          int // 1, 2, ...
	Time       time.Time
	Status     int // HTTP status, 0 when no answer came
	Error      string
	DurationMS float64
}

// Store keeps tenant events, webhooks and deliveries. A missing record is
// an error of errdefs' not-found kind, an existing one where a new one is
// made of its conflict kind. Implementations are safe for concurrent use.
type Store interface {
	// AppendEvents stores tenant events in one transaction, setting each
	// one's ID (ascending, never reused), and creates the deliveries each
	// lists, to webhooks that still exist.
	AppendEvents(ctx context.Context, events []Event) error
	// TenantEvents returns up to limit of a tenant's events with an ID
	// above after, oldest first; with types, only those.
	TenantEvents(ctx context.Context, tenantID string, after int64, types []string, limit int) ([]Event, error)
	// PruneEvents deletes events older than before and all but the newest
	// keep (0: no count bound), except those a pending delivery needs,
	// and finished deliveries that ended before before. It returns how
	// many events went.
	PruneEvents(ctx context.Context, before time.Time, keep int) (int, error)
	// CreateWebhook inserts a webhook; an existing ID is a conflict.
	CreateWebhook(ctx context.Context, w Webhook) error
	// GetWebhook returns the tenant's webhook, or not found.
	GetWebhook(ctx context.Context, tenantID, id string) (Webhook, error)
	// ListWebhooks returns a tenant's webhooks ("" = all) oldest first.
	ListWebhooks(ctx context.Context, tenantID string) ([]Webhook, error)
	// DeleteWebhook removes the tenant's webhook and its deliveries, or
	// returns not found.
	DeleteWebhook(ctx context.Context, tenantID, id string) error
	// DueDeliveries returns up to limit pending deliveries due by now,
	// earliest first, with their webhook and event.
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// NextDelivery is the earliest time after after at which a pending
	// delivery is due, zero if there is none.
	NextDelivery(ctx context.Context, after time.Time) (time.Time, error)
	// RecordAttempt saves an attempt and the delivery's new state in one
	// transaction; not found if the delivery is gone.
	RecordAttempt(ctx context.Context, d Delivery, a DeliveryAttempt) error
	// ListDeliveries returns up to limit deliveries of the tenant's
	// webhook for events below before (0: from the newest), newest first,
	// with their attempts.
	ListDeliveries(ctx context.Context, tenantID, webhookID string, before int64, limit int) ([]Delivery, error)
}
