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

var (
	_ runtime.Listener = (*sandbox)(nil)
	_ runtime.Dialer   = (*sandbox)(nil)
)

// Listen listens on address inside the sandbox's network namespace; this
// host process serves what arrives (the egress proxy).
func (s *sandbox) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	ns, err := s.netns("listening in")
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	ln, err := netns.Listen(ns, network, address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s in sandbox %s: %w", address, s.p.ID, err)
	}
	return ln, nil
}

// Dial connects to address inside the sandbox's network namespace (a
// port the sandbox listens on, on its loopback).
func (s *sandbox) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	ns, err := s.netns("connecting into")
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	c, err := netns.Dial(ctx, ns, network, address)
	if err != nil {
		return nil, fmt.Errorf("connect to %s in sandbox %s: %w", address, s.p.ID, err)
	}
	return c, nil
}

// netns opens the sandbox's network namespace through the init's /proc
// entry and checks the init afterwards, so a recycled pid can never lend
// another process's namespace.
func (s *sandbox) netns(doing string) (*os.File, error) {
	if s.r.rootless {
		return nil, fmt.Errorf("%w: %s a sandbox's network namespace needs a daemon running as root", runtime.ErrInvalid, doing)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", s.p.Pid))
	if err != nil {
		return nil, s.gone(fmt.Errorf("open network namespace: %w", err))
	}
	if !procAlive(s.p.Pid, s.p.Start) {
		ns.Close()
		return nil, fmt.Errorf("%w: sandbox %s: its init is gone", runtime.ErrNotFound, s.p.ID)
	}
	return ns, nil
}

// gone reports a missing /proc entry of the init as a lost sandbox.
func (s *sandbox) gone(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: sandbox %s: %v", runtime.ErrNotFound, s.p.ID, err)
	}
	return err
}
