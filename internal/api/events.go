package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/events"
)

var errNoEvents = errf(http.StatusServiceUnavailable, codeUnavailable, "this server does not publish events")

// eventsQuery reads GET /v1/events: where to start (the Last-Event-ID
// header, which an EventSource sends when it reconnects, wins over
// ?after=; neither means live events only) and the types to follow.
func eventsQuery(r *http.Request) (after int64, types []string, err error) {
	if err := checkQuery(r, []string{"after", "type"}); err != nil {
		return 0, nil, err
	}
	after = -1
	id := func(what, v string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, invalidf("%s %q: want an event id (0 or more)", what, v)
		}
		return n, nil
	}
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = id("query parameter after", v); err != nil {
			return 0, nil, err
		}
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, err = id("header Last-Event-ID", v); err != nil {
			return 0, nil, err
		}
	}
	if v := r.URL.Query().Get("type"); v != "" {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(events.Types, t) {
				return 0, nil, invalidf("query parameter type=%q: %q is not an event type; want some of %s",
					v, t, strings.Join(events.Types, ", "))
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	return after, types, nil
}

// streamEvents follows the caller's tenant's events as server-sent
// events, each with its id, so that a client that reconnects with
// Last-Event-ID gets exactly what it missed.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.fail(w, r, errNoEvents)
		return
	}
	after, types, err := eventsQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	stop := st.keepAlive(s.keepAlive)
	defer stop()
	// The answer begins once the stream is live (or with the first
	// replayed event): a client that has the headers misses nothing
	// from then on, and a quiet tenant's stream still gets keep-alives.
	live := func() { st.begin() }
	err = s.events.Follow(r.Context(), callerOf(r).TenantID, after, types, live, st.tenantEvent)
	st.mu.Lock()
	begun := st.begun
	st.mu.Unlock()
	switch {
	case r.Context().Err() != nil:
	case !begun && errors.Is(err, events.ErrClosed):
		s.fail(w, r, errf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down"))
	case !begun && err != nil:
		s.fail(w, r, err)
	case errors.Is(err, events.ErrSlow):
		st.event("dropped", errorDetail{Code: codeSlowConsumer, Message: err.Error()})
	case errors.Is(err, events.ErrClosed):
		st.comment("server shutting down; reconnect with Last-Event-ID")
	case err != nil:
		s.log.Error("event stream failed", "tenant", callerOf(r).TenantID, "err", err)
		_, code, msg := statusOf(err)
		st.event("error", errorDetail{Code: code, Message: msg})
	}
}

// tenantEvent writes one event with its id and type and flushes it.
func (st *sseStream) tenantEvent(e events.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", e.ID, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.beginLocked()
	if _, err := fmt.Fprintf(st.w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data); err != nil {
		return fmt.Errorf("write event %d: %w", e.ID, err)
	}
	return st.rc.Flush()
}

// comment writes an SSE comment line, which clients ignore.
func (st *sseStream) comment(text string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.beginLocked()
	if _, err := io.WriteString(st.w, ": "+text+"\n\n"); err == nil {
		st.rc.Flush()
	}
}
