package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/airlockhq/airlock/internal/netns"
	"github.com/airlockhq/airlock/internal/runtime"
)

var _ runtime.Listener = (*sandbox)(nil)

// Listen listens on address inside the sandbox's network namespace; this
// host process serves what arrives (the egress proxy). The namespace is
// opened through the init's /proc entry and the init checked afterwards,
// so a recycled pid can never lend another process's namespace.
func (s *sandbox) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	if s.r.rootless {
		return nil, fmt.Errorf("%w: listening in a sandbox's network namespace needs a daemon running as root", runtime.ErrInvalid)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", s.p.Pid))
	if err != nil {
		return nil, s.gone(fmt.Errorf("open network namespace: %w", err))
	}
	defer ns.Close()
	if !procAlive(s.p.Pid, s.p.Start) {
		return nil, fmt.Errorf("%w: sandbox %s: its init is gone", runtime.ErrNotFound, s.p.ID)
	}
	ln, err := netns.Listen(ns, network, address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s in sandbox %s: %w", address, s.p.ID, err)
	}
	return ln, nil
}

// gone reports a missing /proc entry of the init as a lost sandbox.
func (s *sandbox) gone(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: sandbox %s: %v", runtime.ErrNotFound, s.p.ID, err)
	}
	return err
}
