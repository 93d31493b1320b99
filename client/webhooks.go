package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WebhookRequest creates a webhook. Events are event types (EventSandboxCreated...)
// or "*" for all. Without a Secret the server makes one and returns it
// once, in the created Webhook.
type WebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Secret string   `json:"secret,omitempty"`
}

// Webhook is a webhook as the server describes it. Secret is set only in
// the answer to CreateWebhook.
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

// WebhookDelivery is one event's way to one webhook.
type WebhookDelivery struct {
	ID            string           `json:"id"` // the Airlock-Delivery-Id header
	EventID       int64            `json:"event_id"`
	EventType     string           `json:"event_type"`
	State         string           `json:"state"` // "pending", "delivered" or "failed" (given up)
	CreatedAt     time.Time        `json:"created_at"`
	NextAttemptAt time.Time        `json:"next_attempt_at,omitzero"`
	DeliveredAt   time.Time        `json:"delivered_at,omitzero"`
	FailedAt      time.Time        `json:"failed_at,omitzero"`
	Attempts      []WebhookAttempt `json:"attempts"`
}

// WebhookAttempt is one try at a delivery: the HTTP status that came
// back (0 if none did) and why it failed.
type WebhookAttempt struct {
	N          int       `json:"n"`
	Time       time.Time `json:"time"`
	Status     int       `json:"status,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// CreateWebhook subscribes a URL to the tenant's events.
func (c *Client) CreateWebhook(ctx context.Context, req WebhookRequest) (Webhook, error) {
	var w Webhook
	err := c.doJSON(ctx, http.MethodPost, "/v1/webhooks", nil, req, &w)
	return w, err
}

// ListWebhooks lists the tenant's webhooks, without their secrets.
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/webhooks", nil, nil, &out)
	return out.Webhooks, err
}

// DeleteWebhook deletes a webhook; its pending deliveries are not made.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(id), nil, nil, nil)
}

// WebhookDeliveries returns up to limit (0: the server's 100) of a
// webhook's deliveries for events below before (0: from the newest),
// newest first, each with every attempt.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, before int64, limit int) ([]WebhookDelivery, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Deliveries []WebhookDelivery `json:"deliveries"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/webhooks/"+url.PathEscape(id)+"/deliveries", q, nil, &out)
	return out.Deliveries, err
}

// ErrBadSignature: a delivery's Airlock-Signature does not hold.
var ErrBadSignature = errors.New("webhook signature does not verify")

// VerifyWebhook checks a delivery before a receiver acts on it:
// signature is its Airlock-Signature header ("t=UNIX,v1=HEX"), HEX being
// the HMAC-SHA256 under secret of t, ".", and the body as received. t
// must be within tolerance of now (0: 5 minutes), so that a delivery
// captured on the way cannot be replayed later; a receiver that must not
// act twice also keeps the Airlock-Delivery-Id values it has seen.
func VerifyWebhook(secret, signature string, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(signature, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: malformed header %q", ErrBadSignature, signature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %v, more than %v from now", ErrBadSignature, time.Unix(sec, 0).UTC(), tolerance)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	// Any v1 value may match: room for signing with an old and a new
	// secret during a rotation.
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrBadSignature
}
