package store

import "time"

// TenantEvent is one entry of a tenant's event stream (GET /v1/events,
// webhooks). Data is JSON, opaque to the store.
type TenantEvent struct {
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
	Event      TenantEvent       // filled by DueDeliveries
}

// DeliveryAttempt is one try at a delivery.
type DeliveryAttempt struct {
	N          int // 1, 2, ...
	Time       time.Time
	Status     int // HTTP status, 0 when no answer came
	Error      string
	DurationMS float64
}
