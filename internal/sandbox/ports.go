package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
)

// DialPort connects to a TCP port the caller's running sandbox listens on
// inside its own network (its loopback, or any address of its namespace
// bound by 0.0.0.0): the API proxies HTTP to it. The egress proxy's own
// ports are refused. Nothing listening is ErrUnavailable.
func (s *Service) DialPort(ctx context.Context, c Caller, id string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("%w: port %d: want 1 to 65535", ErrInvalid, port)
	}
	if port == egress.HTTPPort || port == egress.SOCKSPort {
		return nil, fmt.Errorf("%w: port %d is the sandbox's egress proxy", ErrInvalid, port)
	}
	rec, sb, err := s.live(ctx, c, id)
	if err != nil {
		return nil, err
	}
	d, ok := sb.(runtime.Dialer)
	if !ok {
		return nil, fmt.Errorf("%w: this runtime cannot connect into sandboxes", runtime.ErrUnsupported)
	}
	conn, err := d.Dial(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if errors.Is(err, runtime.ErrNotFound) {
		return nil, s.markLost(ctx, id, err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("%w: sandbox %s: nothing listens on port %d", ErrUnavailable, id, port)
	}
	if err != nil {
		// The details name host paths: they stay in the daemon's log.
		s.log.Warn("connect into sandbox", "sandbox", id, "port", port, "err", err)
		return nil, fmt.Errorf("%w: sandbox %s: cannot connect to port %d", ErrUnavailable, id, port)
	}
	// An open connection (a request under way, a WebSocket) keeps the
	// sandbox from counting as idle, and is logged when it ends.
	return s.trackPort(conn, c, id, rec.TenantID, port), nil
}
