package sandbox

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/live"
)

// What runs in a live sandbox beyond one request (background processes,
// commands streamed to clients, sessions and their terminals) is
// internal/live's. The service checks first (the caller's sandbox, the
// request), records what starts in the audit log, and hands the rest over;
// live reaches back only through liveHost and the recorders of
// audit_live.go.

// liveHost is what the live work asks of the service.
type liveHost struct{ s *Service }

var _ live.Host = liveHost{}

func (h liveHost) Now() time.Time { return h.s.now() }

func (h liveHost) Hold(id string) func() { return h.s.idle.hold(id, h.s.now) }

func (h liveHost) Touch(id string) { h.s.idle.touch(id, h.s.now()) }

func (h liveHost) ExecError(ctx context.Context, id string, err error) error {
	return h.s.execError(ctx, id, err)
}

func (h liveHost) Stopped(ctx context.Context, id string) error { return h.s.stoppedError(ctx, id) }
