package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// Get returns the caller's sandbox in whatever state it is, stopped and
// failed included.
func (s *Service) Get(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, error) {
	rec, err := s.resolve(ctx, c, id)
	return s.view(rec), err
}

// AgentVersion is the agent protocol version running sandbox rec's init
// speaks (older than this binary's for a sandbox an older one started), or
// 0 when it cannot be had (the sandbox is not running, or does not say).
func (s *Service) AgentVersion(ctx context.Context, rec sandboxrec.Sandbox) int {
	if rec.State != sandboxrec.Running {
		return 0
	}
	sb, err := s.rt.Get(ctx, rec.ID)
	if err != nil {
		return 0
	}
	av, ok := sb.(runtime.AgentVersioner)
	if !ok {
		return 0
	}
	v, err := av.AgentVersion(ctx)
	if err != nil {
		return 0
	}
	return v
}

// AgentVersions counts the running sandboxes by the agent protocol version
// they speak (0: not known).
func (s *Service) AgentVersions(ctx context.Context) (map[int]int, error) {
	recs, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	out := map[int]int{}
	for _, rec := range recs {
		out[s.AgentVersion(ctx, rec)]++
	}
	return out, nil
}

// List returns the caller's sandboxes matching f. The filter's tenant is
// always the caller's; a token caller sees at most its own sandbox.
func (s *Service) List(ctx context.Context, c Caller, f sandboxrec.Filter) ([]sandboxrec.Sandbox, error) {
	if c.TenantID == "" {
		return nil, nil
	}
	f.TenantID = c.TenantID
	if c.SandboxID == "" {
		l, err := s.st.ListSandboxes(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("list sandboxes: %w", err)
		}
		for i := range l {
			l[i] = s.view(l[i])
		}
		return l, nil
	}
	rec, err := s.resolve(ctx, c, c.SandboxID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !matches(rec, f) {
		return nil, nil
	}
	return []sandboxrec.Sandbox{s.view(rec)}, nil
}

// matches applies f to one record, as the store would.
func matches(rec sandboxrec.Sandbox, f sandboxrec.Filter) bool {
	if f.State != "" && rec.State != f.State {
		return false
	}
	if f.After != "" && rec.ID <= f.After {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := rec.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Delete destroys the sandbox and keeps its record as stopped (a failed
// one keeps its state and reason). Deleting it again is not an error.
func (s *Service) Delete(ctx context.Context, c Caller, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return err
	}
	if rec.State == sandboxrec.Stopped {
		return nil
	}
	return s.stopLocked(context.WithoutCancel(ctx), c, rec, "")
}

// stopLocked destroys rec's runtime side and records the end, done by c
// (the zero Caller: the daemon itself). The caller holds rec's lock. A
// failed record keeps its state: its reason says what happened, and the
// destroy only reclaims what is left.
func (s *Service) stopLocked(ctx context.Context, c Caller, rec sandboxrec.Sandbox, reason string) error {
	s.detach(rec.ID)
	s.idle.forget(rec.ID)
	// First, so readers of background output learn why it ends rather
	// than seeing the kill as an ordinary exit.
	s.work.Drop(rec.ID)
	// Not asked first whether it is there: a sandbox gone is no error
	// to Destroy, and a node spared a round trip.
	sb, err := runtime.GetLazy(ctx, s.rt, rec.ID)
	if err == nil {
		// Read in the same call: the cgroup goes with the sandbox.
		var final runtime.FinalStats
		final, err = runtime.DestroyStats(ctx, sb)
		s.meterFinal(rec.ID, final)
	}
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("%w: destroy sandbox %s: %v", ErrUnavailable, rec.ID, err)
	}
	if rec.State != sandboxrec.Failed {
		rec.State, rec.Reason = sandboxrec.Stopped, reason
	}
	if rec.EndedAt.IsZero() {
		rec.EndedAt = s.now()
	}
	// Saving it stopped or failed deletes its tokens in the same write.
	// Deferred: every read through the store sees it stopped at once
	// (a token lookup writes it first), and after a crash before the write, reconcile finds the runtime's
	// sandbox gone and marks the record failed, lost on restart.
	if err := s.st.UpdateSandboxSoon(ctx, rec); err != nil {
		return fmt.Errorf("save sandbox %s: %w", rec.ID, err)
	}
	s.recordStopped(c, rec)
	s.meterEnd(ctx, rec)
	return nil
}

// SetTimeout moves a running sandbox's expiry to now + d.
func (s *Service) SetTimeout(ctx context.Context, c Caller, id string, d time.Duration) (sandboxrec.Sandbox, error) {
	if d <= 0 || d > MaxTimeout {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: timeout %v must be between 1s and %v", ErrInvalid, d, MaxTimeout)
	}
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if err := notRunning(rec); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	rec.ExpiresAt = s.now().Add(d)
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("save sandbox %s: %w", id, err)
	}
	s.wakeReaper(rec.ExpiresAt)
	return rec, nil
}
