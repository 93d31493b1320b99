package linux

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
)

var _ runtime.Pauser = (*sandbox)(nil)

// freezeTimeout bounds how long a pause waits for every task to stop: one
// in uninterruptible sleep (a read from a slow disk) holds it off.
const freezeTimeout = 5 * time.Second

// Pause freezes every process of the sandbox, the agent included, with
// the cgroup freezer: they keep their memory and use no CPU until Resume.
// The group stays frozen across a daemon restart.
func (s *sandbox) Pause(ctx context.Context) error {
	if s.cg == nil {
		return fmt.Errorf("%w: pause sandbox %s: it has no cgroup", runtime.ErrUnsupported, s.p.ID)
	}
	if err := s.cg.Freeze(freezeTimeout); err != nil {
		// Half frozen helps nobody: the caller sees it running.
		s.cg.Thaw()
		if errors.Is(err, cgroups.ErrNoFreezer) {
			return fmt.Errorf("%w: pause sandbox %s: %v", runtime.ErrUnsupported, s.p.ID, err)
		}
		return fmt.Errorf("pause sandbox %s: %w", s.p.ID, err)
	}
	return nil
}

// Resume thaws what Pause froze.
func (s *sandbox) Resume(ctx context.Context) error {
	if s.cg == nil {
		return fmt.Errorf("%w: resume sandbox %s: it has no cgroup", runtime.ErrUnsupported, s.p.ID)
	}
	if err := s.cg.Thaw(); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", s.p.ID, err)
	}
	return nil
}

// frozen says whether the sandbox is paused (for Snapshot: a paused
// sandbox stays paused after).
func (s *sandbox) frozen() bool { return s.cg != nil && s.cg.Frozen() }
