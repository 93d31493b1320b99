package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one entry of the tenant's event stream. Data is the event's
// data as the sandbox's audit log records it.
type Event struct {
	ID        int64           `json:"id"`
	Time      time.Time       `json:"time"`
	Type      string          `json:"type"`
	SandboxID string          `json:"sandbox_id"`
	Data      json.RawMessage `json:"data"`
}

// Event types of the stream and of webhooks.
const (
	EventSandboxCreated   = "sandbox.created"
	EventSandboxExpired   = "sandbox.expired"
	EventSandboxDestroyed = "sandbox.destroyed"
	EventSandboxFailed    = "sandbox.failed"
	EventExecExited       = "exec.exited"
	EventSessionEnded     = "session.ended"
	// An approval was opened, or decided (or timed out): Data is the
	// Approval.
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// EventsOptions says where a stream starts and what it carries.
type EventsOptions struct {
	// After resumes after this event id: the events the server kept
	// since (7 days by default) come first, then live ones. With 0 and
	// FromStart unset, only events from now on.
	After int64
	// FromStart replays every event the server kept before the live ones.
	FromStart bool
	// Types, if any, selects event types.
	Types []string
}

// ErrStreamDropped: the server dropped the stream because the client fell
// too far behind. Resume with the id Events returned.
var ErrStreamDropped = errors.New("event stream dropped: the client fell behind")

// Events follows the tenant's event stream (GET /v1/events), calling fn
// with each event in order, until ctx ends, fn returns an error or the
// stream ends. It returns the id of the last event fn got, to resume from
// with EventsOptions.After: nothing is missed or repeated. It does not
// reconnect on its own; a stream ended by the server (shutting down) is
// io.ErrUnexpectedEOF, one dropped for falling behind ErrStreamDropped.
func (c *Client) Events(ctx context.Context, opts EventsOptions, fn func(Event) error) (last int64, err error) {
	last = opts.After
	q := url.Values{}
	if len(opts.Types) > 0 {
		q.Set("type", strings.Join(opts.Types, ","))
	}
	hdr := http.Header{}
	switch {
	case opts.After > 0:
		hdr.Set("Last-Event-ID", strconv.FormatInt(opts.After, 10))
	case opts.FromStart:
		q.Set("after", "0")
	}
	err = c.followSSE(ctx, "/v1/events", q, hdr, "event stream", func(ev sseEvent) (bool, error) {
		if ev.Type == "dropped" {
			return true, ErrStreamDropped
		}
		var e Event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return true, fmt.Errorf("decode event: %w", err)
		}
		if err := fn(e); err != nil {
			return true, err
		}
		last = e.ID
		return false, nil
	})
	return last, err
}
