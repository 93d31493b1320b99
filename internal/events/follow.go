package events

import (
	"context"
	"errors"
	"slices"

	"github.com/airlockhq/airlock/internal/events/eventrec"
)

// Why a followed stream ends other than by its context.
var (
	// ErrSlow: the client fell Options.Buffer events behind the live
	// stream; it resumes after the last id it got.
	ErrSlow = errors.New("events: the client fell too far behind and was dropped; resume after the last event id")
	// ErrClosed: the server is shutting down.
	ErrClosed = errors.New("events: the server is shutting down")
)

// replayPage is how many stored events one query reads.
const replayPage = 500

// subscription is one live follower of a tenant's events.
type subscription struct {
	c     chan Event
	types []string // empty: every type
	err   error    // why c was closed; set before closing
}

func (s *subscription) wants(typ string) bool {
	return len(s.types) == 0 || slices.Contains(s.types, typ)
}

func (h *Hub) subscribe(tenant string, types []string) *subscription {
	s := &subscription{c: make(chan Event, h.opts.Buffer), types: types}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed.Load() || h.ended {
		s.err = ErrClosed
		close(s.c)
		return s
	}
	if h.subs[tenant] == nil {
		h.subs[tenant] = map[*subscription]struct{}{}
	}
	h.subs[tenant][s] = struct{}{}
	return s
}

func (h *Hub) unsubscribe(tenant string, s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[tenant][s]; ok {
		h.endLocked(tenant, s, nil)
	}
}

// endLocked removes s and closes its channel. h.mu is held.
func (h *Hub) endLocked(tenant string, s *subscription, err error) {
	delete(h.subs[tenant], s)
	if len(h.subs[tenant]) == 0 {
		delete(h.subs, tenant)
	}
	s.err = err
	close(s.c)
}

// fanOut hands stored events to their tenants' live subscribers, in ID
// order. A subscriber whose buffer is full is dropped, never waited for.
func (h *Hub) fanOut(evs []eventrec.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range evs {
		for s := range h.subs[e.TenantID] {
			if !s.wants(e.Type) {
				continue
			}
			select {
			case s.c <- fromStore(e):
			default:
				h.endLocked(e.TenantID, s, ErrSlow)
			}
		}
	}
}

// EndStreams ends every live stream, and any begun later, with
// ErrClosed, so that a server shutting down does not wait for followers
// that never go idle.
func (h *Hub) EndStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	for tenant, subs := range h.subs {
		for s := range subs {
			h.endLocked(tenant, s, ErrClosed)
		}
	}
}

// Follow sends the tenant's events to send, in ID order, each once: with
// after >= 0 first the stored events after that ID (those that happened
// while the client was away), then live ones as they are stored; with
// after < 0 only live ones. types, if any, selects event types. live, if
// set, is called once no event stored from then on can be missed. Follow
// returns when ctx ends, send fails, the client falls behind (ErrSlow) or
// the hub closes (ErrClosed).
func (h *Hub) Follow(ctx context.Context, tenant string, after int64, types []string, live func(), send func(Event) error) error {
	last := after
	replay := func() error {
		for {
			page, err := h.st.TenantEvents(ctx, tenant, last, types, replayPage)
			if err != nil {
				return err
			}
			for _, e := range page {
				if err := send(fromStore(e)); err != nil {
					return err
				}
				last = e.ID
			}
			if len(page) < replayPage {
				return nil
			}
		}
	}
	// Replay first without holding a live buffer (a long backlog would
	// overflow it), then subscribe, then replay what was stored between
	// the two; live events already replayed are skipped by ID.
	if after >= 0 {
		if err := replay(); err != nil {
			return err
		}
	}
	s := h.subscribe(tenant, types)
	defer h.unsubscribe(tenant, s)
	if live != nil {
		live()
	}
	if after >= 0 {
		if err := replay(); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-s.c:
			if !ok {
				return s.err
			}
			if e.ID <= last {
				continue
			}
			if err := send(e); err != nil {
				return err
			}
			last = e.ID
		}
	}
}
