// Package events turns the audit log's lifecycle and exec-exit events into
// each tenant's event stream: numbered, stored (so a client resumes after
// the last id it saw, across restarts), followed live over SSE and
// delivered to the tenant's webhooks, signed and retried.
//
// The hub never blocks whoever records an event: Publish only queues (and
// drops, counted, when the queue is full), one goroutine writes. A tenant
// never sees another tenant's events, and a webhook is never dialed at an
// address that is loopback, private, link-local or a metadata service
// unless the operator allowed private destinations: the check runs on the
// address actually dialed, so DNS rebinding cannot slip past it.
package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/batch"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/secrets"
)

// Types are the audit event types a tenant's stream carries.
var Types = []string{
	audit.SandboxCreated, audit.SandboxExpired, audit.SandboxDestroyed, audit.SandboxFailed,
	audit.SandboxPaused, audit.SandboxResumed, audit.SnapshotCreated, audit.SandboxForked,
	audit.ExecExited, audit.SessionEnded, audit.TaskStarted, audit.TaskFinished,
	audit.ApprovalRequested, audit.ApprovalDecided,
}

func published(typ string) bool { return slices.Contains(Types, typ) }

// Event is one entry of a tenant's stream as clients see it. Data is the
// audit event's data.
type Event struct {
	ID        int64           `json:"id"`
	Time      time.Time       `json:"time"`
	Type      string          `json:"type"`
	SandboxID string          `json:"sandbox_id"`
	Data      json.RawMessage `json:"data"`
}

func fromStore(e eventrec.Event) Event {
	return Event{ID: e.ID, Time: e.Time, Type: e.Type, SandboxID: e.SandboxID, Data: e.Data}
}

// Options tunes a Hub. Zero fields take the defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// Box seals webhook secrets at rest; nil refuses webhooks.
	Box *secrets.Box
	// Retention bounds how long events are kept for resuming (default 7
	// days); MaxEvents how many, over all tenants (default 1,000,000).
	Retention time.Duration
	MaxEvents int
	// Buffer is how many events a live subscriber may fall behind before
	// it is dropped (default 1024).
	Buffer int

	// AllowPrivate lets webhooks reach loopback, private, link-local and
	// other non-public addresses (tests, or receivers on the same host).
	AllowPrivate bool
	// RetryBase is the delay after a first failed attempt, doubled after
	// each further one up to RetryMaxDelay (defaults 5 s, 1 h); a
	// delivery is given up once RetryFor has passed since its event
	// (default 24 h).
	RetryBase     time.Duration
	RetryMaxDelay time.Duration
	RetryFor      time.Duration
	// Timeout bounds one attempt, answer included (default 10 s).
	Timeout time.Duration
	// Workers is how many deliveries run at once (default 8).
	Workers int
	// MaxWebhooks bounds a tenant's webhooks (default 20).
	MaxWebhooks int
}

func (o *Options) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	set(&o.Retention, 7*24*time.Hour)
	setInt(&o.MaxEvents, 1_000_000)
	setInt(&o.Buffer, 1024)
	set(&o.RetryBase, 5*time.Second)
	set(&o.RetryMaxDelay, time.Hour)
	set(&o.RetryFor, 24*time.Hour)
	set(&o.Timeout, 10*time.Second)
	setInt(&o.Workers, 8)
	setInt(&o.MaxWebhooks, 20)
}

// pruneEvery is how often old events and finished deliveries go.
const pruneEvery = time.Hour

// Hub numbers, stores and fans out tenant events. Create it with New and
// stop it with Close.
type Hub struct {
	st   Store
	opts Options
	log  *slog.Logger

	b      *batch.Batcher[audit.Event]
	stop   chan struct{} // ends the pruner
	done   chan struct{} // closed when the pruner has ended
	closed atomic.Bool

	mu    sync.Mutex
	subs  map[string]map[*subscription]struct{} // by tenant
	hooks map[string][]hookRef                  // by tenant
	ended bool                                  // EndStreams was called

	d *dispatcher
}

// New starts a hub on st: its writer, and the webhook dispatcher, which
// picks up the deliveries a previous process left pending.
func New(ctx context.Context, st Store, opts Options) (*Hub, error) {
	opts.defaults()
	h := &Hub{st: st, opts: opts, log: opts.Logger,
		stop: make(chan struct{}), done: make(chan struct{}),
		subs: map[string]map[*subscription]struct{}{}, hooks: map[string][]hookRef{}}
	list, err := st.ListWebhooks(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, w := range list {
		h.hooks[w.TenantID] = append(h.hooks[w.TenantID], newHookRef(w))
	}
	h.d = newDispatcher(h)
	// Not blocking: the audit log's lock is held while publishing; the
	// log itself keeps every event.
	h.b = batch.New("event stream", h.log, false, batch.Linger, h.write)
	go h.pruneLoop()
	return h, nil
}

// Publish queues an audit event for the stream if its type is one the
// stream carries. It never blocks: the audit log calls it with its lock
// held. A full queue drops the event (counted, logged).
func (h *Hub) Publish(e audit.Event) {
	if !published(e.Type) || h.closed.Load() {
		return
	}
	h.b.Add(e)
}

// Flush returns once every event published before the call is stored and
// sent to live subscribers.
func (h *Hub) Flush() { h.b.Flush() }

// Close writes what is queued, ends every live stream and stops the
// dispatcher; a delivery cut off is tried again by the next process.
func (h *Hub) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	close(h.stop)
	<-h.done
	h.b.Close()
	h.EndStreams()
	h.d.close()
	return nil
}

// pruneLoop deletes old events and finished deliveries now and then.
func (h *Hub) pruneLoop() {
	defer close(h.done)
	h.prune()
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			h.prune()
		case <-h.stop:
			return
		}
	}
}

// write stores a batch with the deliveries its events owe, then hands it
// to live subscribers: an event is followed live only once it is stored,
// so a client that resumes from the store never misses one that was sent
// live to others.
func (h *Hub) write(got []audit.Event) {
	if len(got) == 0 {
		return
	}
	evs := make([]eventrec.Event, len(got))
	deliveries := 0
	h.mu.Lock()
	for i, e := range got {
		evs[i] = eventrec.Event{TenantID: e.Tenant, SandboxID: e.Sandbox, Type: e.Type, Time: e.Time, Data: e.Data}
		for _, w := range h.hooks[e.Tenant] {
			if w.wants(e.Type) {
				evs[i].Deliveries = append(evs[i].Deliveries, eventrec.Delivery{ID: newID("dlv_"), WebhookID: w.id})
				deliveries++
			}
		}
	}
	h.mu.Unlock()
	if err := batch.Retry("store events", h.log, func() error { return h.st.AppendEvents(context.Background(), evs) }, nil); err != nil {
		h.log.Error("store events: events lost", "events", len(evs), "err", err)
		return
	}
	h.fanOut(evs)
	if deliveries > 0 {
		h.d.poke()
	}
}

func (h *Hub) prune() {
	n, err := h.st.PruneEvents(context.Background(), h.opts.Now().Add(-h.opts.Retention), h.opts.MaxEvents)
	if err != nil {
		h.log.Error("prune events", "err", err)
	} else if n > 0 {
		h.log.Info("pruned events", "events", n)
	}
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
