package events

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/events/eventrec"
)

// Errors the API maps to statuses.
var (
	ErrInvalid       = errors.New("invalid webhook")
	ErrLimitExceeded = errors.New("webhook limit reached")
	// ErrDisabled: the server has no master key to seal webhook secrets.
	ErrDisabled = errors.New("webhooks are disabled on this server: it has no master key to seal their secrets")
)

// WebhookRequest is POST /v1/webhooks. Without a secret the server makes
// one and returns it once.
type WebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Secret string   `json:"secret,omitempty"`
}

// Webhook is a webhook as the API shows it. Secret is set only in the
// answer to its creation.
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

// Delivery is one event's way to one webhook, with every attempt.
type Delivery struct {
	ID            string    `json:"id"`
	EventID       int64     `json:"event_id"`
	EventType     string    `json:"event_type"`
	State         string    `json:"state"` // pending, delivered, failed (given up)
	CreatedAt     time.Time `json:"created_at"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	DeliveredAt   time.Time `json:"delivered_at,omitzero"`
	FailedAt      time.Time `json:"failed_at,omitzero"`
	Attempts      []Attempt `json:"attempts"`
}

// Attempt is one try: the HTTP status that came back, or why none did.
type Attempt struct {
	N          int       `json:"n"`
	Time       time.Time `json:"time"`
	Status     int       `json:"status,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// Limits of a webhook request.
const (
	maxURLLen    = 2048
	minSecretLen = 16
	maxSecretLen = 256
)

// hookRef is what the writer needs of a webhook to owe it deliveries.
type hookRef struct {
	id     string
	events []string // "*" matches every type
}

func newHookRef(w eventrec.Webhook) hookRef { return hookRef{id: w.ID, events: w.Events} }

func (r hookRef) wants(typ string) bool {
	return slices.Contains(r.events, "*") || slices.Contains(r.events, typ)
}

// webhookAD binds a sealed secret to its row: a ciphertext copied to
// another tenant's or webhook's row does not open.
func webhookAD(tenantID, id string) []byte { return []byte("webhook\x00" + tenantID + "\x00" + id) }

// CreateWebhook checks and stores a tenant's webhook, its secret sealed.
func (h *Hub) CreateWebhook(ctx context.Context, tenant string, req WebhookRequest) (Webhook, error) {
	if h.opts.Box == nil {
		return Webhook{}, ErrDisabled
	}
	u, err := CheckURL(req.URL, h.opts.AllowPrivate)
	if err != nil {
		return Webhook{}, err
	}
	types, err := checkTypes(req.Events)
	if err != nil {
		return Webhook{}, err
	}
	secret := req.Secret
	switch {
	case secret == "":
		b := make([]byte, 32)
		rand.Read(b)
		secret = "whsec_" + base64.RawURLEncoding.EncodeToString(b)
	case len(secret) < minSecretLen || len(secret) > maxSecretLen:
		return Webhook{}, fmt.Errorf("%w: field \"secret\" is %d bytes; want %d to %d, or leave it out to get one made",
			ErrInvalid, len(secret), minSecretLen, maxSecretLen)
	}
	h.mu.Lock()
	n := len(h.hooks[tenant])
	h.mu.Unlock()
	if n >= h.opts.MaxWebhooks {
		return Webhook{}, fmt.Errorf("%w: a tenant has at most %d webhooks", ErrLimitExceeded, h.opts.MaxWebhooks)
	}
	w := eventrec.Webhook{ID: newID("wh_"), TenantID: tenant, URL: u, Events: types, CreatedAt: h.opts.Now().UTC()}
	w.Sealed = h.opts.Box.Seal([]byte(secret), webhookAD(tenant, w.ID))
	if err := h.st.CreateWebhook(ctx, w); err != nil {
		return Webhook{}, err
	}
	h.mu.Lock()
	h.hooks[tenant] = append(h.hooks[tenant], newHookRef(w))
	h.mu.Unlock()
	out := webhookOf(w)
	out.Secret = secret
	return out, nil
}

// ListWebhooks returns a tenant's webhooks, without secrets.
func (h *Hub) ListWebhooks(ctx context.Context, tenant string) ([]Webhook, error) {
	list, err := h.st.ListWebhooks(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Webhook, 0, len(list))
	for _, w := range list {
		out = append(out, webhookOf(w))
	}
	return out, nil
}

// DeleteWebhook removes a tenant's webhook and its deliveries; one of
// another tenant is errdefs.ErrNotFound.
func (h *Hub) DeleteWebhook(ctx context.Context, tenant, id string) error {
	if err := h.st.DeleteWebhook(ctx, tenant, id); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("webhook %q %w", id, errdefs.ErrNotFound)
		}
		return err
	}
	h.mu.Lock()
	h.hooks[tenant] = slices.DeleteFunc(h.hooks[tenant], func(r hookRef) bool { return r.id == id })
	if len(h.hooks[tenant]) == 0 {
		delete(h.hooks, tenant)
	}
	h.mu.Unlock()
	return nil
}

// Deliveries returns up to limit deliveries of a tenant's webhook for
// events below before (0: from the newest), newest first.
func (h *Hub) Deliveries(ctx context.Context, tenant, id string, before int64, limit int) ([]Delivery, error) {
	if _, err := h.st.GetWebhook(ctx, tenant, id); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, fmt.Errorf("webhook %q %w", id, errdefs.ErrNotFound)
		}
		return nil, err
	}
	list, err := h.st.ListDeliveries(ctx, tenant, id, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, 0, len(list))
	for _, d := range list {
		dl := Delivery{ID: d.ID, EventID: d.EventID, EventType: d.EventType, State: d.State, CreatedAt: d.CreatedAt,
			Attempts: make([]Attempt, 0, len(d.History))}
		switch d.State {
		case eventrec.DeliveryPending:
			dl.NextAttemptAt = d.NextAt
		case eventrec.DeliveryDelivered:
			dl.DeliveredAt = d.EndedAt
		case eventrec.DeliveryFailed:
			dl.FailedAt = d.EndedAt
		}
		for _, a := range d.History {
			dl.Attempts = append(dl.Attempts, Attempt{N: a.N, Time: a.Time, Status: a.Status, Error: a.Error, DurationMS: a.DurationMS})
		}
		out = append(out, dl)
	}
	return out, nil
}

func webhookOf(w eventrec.Webhook) Webhook {
	return Webhook{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt}
}

// CheckURL checks a webhook URL and returns it as it will be used: http
// or https, a host, no credentials (they would be stored and shown in
// the clear), no fragment. Unless allowPrivate, a host that is a
// non-public IP address or localhost is refused here; names are checked
// again on every dial, against the addresses they resolve to then.
func CheckURL(raw string, allowPrivate bool) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: field \"url\" %q: "+format, append([]any{ErrInvalid, raw}, args...)...)
	}
	if raw == "" {
		return "", fmt.Errorf("%w: field \"url\" is required", ErrInvalid)
	}
	if len(raw) > maxURLLen {
		return "", fmt.Errorf("%w: field \"url\" is over %d bytes", ErrInvalid, maxURLLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("want an http or https URL")
	case u.Opaque != "" || u.Host == "":
		return bad("no host")
	case u.User != nil:
		return bad("credentials in a URL are stored and shown in the clear; authenticate the signature instead")
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return bad("a fragment is never sent; leave it out")
	}
	host := u.Hostname()
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("port %q: want 1 to 65535", p)
		}
	}
	if host == "" {
		return bad("no host")
	}
	if allowPrivate {
		return u.String(), nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return bad("%s is this host; the server refuses private destinations (--webhooks-allow-private)", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if bad2, name := egress.Forbidden(ip); bad2 {
			return bad("%s is a %s address; the server refuses private destinations (--webhooks-allow-private)", host, name)
		}
	}
	return u.String(), nil
}

// checkTypes checks an event filter: one or more of Types, or "*".
func checkTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("%w: field \"events\" is empty; want event types (%s) or \"*\"", ErrInvalid, strings.Join(Types, ", "))
	}
	if len(types) > len(Types)+1 {
		return nil, fmt.Errorf("%w: field \"events\" has %d entries", ErrInvalid, len(types))
	}
	var out []string
	for _, t := range types {
		if t != "*" && !published(t) {
			return nil, fmt.Errorf("%w: field \"events\": unknown event type %q; want %s or \"*\"", ErrInvalid, t, strings.Join(Types, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if slices.Contains(out, "*") {
		return []string{"*"}, nil
	}
	return out, nil
}
