package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// ReasonExpired is the reason of a sandbox the reaper stopped.
const ReasonExpired = "expired"

// ReasonLostOnRestart is the reason of a sandbox whose runtime side did not
// survive a daemon restart.
const ReasonLostOnRestart = "lost: runtime sandbox gone after restart"

// minReapWait keeps a burst of expiries from spinning the reaper.
const minReapWait = 10 * time.Millisecond

// wakeReaper makes the reaper look again if expiry at comes before its
// next planned look; most new expiries are later and cost nothing.
func (s *Service) wakeReaper(at time.Time) {
	s.wakeMu.Lock()
	sooner := s.wakeAt.IsZero() || at.Before(s.wakeAt)
	s.wakeMu.Unlock()
	if !sooner {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// reapLoop destroys expired sandboxes. It sleeps until the next known expiry
// but never longer than ReapInterval, which also bounds the lateness when the
// clock is not the wall clock or another process changed the store.
func (s *Service) reapLoop() {
	defer close(s.done)
	for {
		s.wakeMu.Lock()
		s.wakeAt = time.Time{}
		s.wakeMu.Unlock()
		wait := s.opts.ReapInterval
		if next := s.reapOnce(); !next.IsZero() {
			wait = min(wait, max(next.Sub(s.now()), minReapWait))
		}
		s.wakeMu.Lock()
		s.wakeAt = s.now().Add(wait)
		s.wakeMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// reapOnce stops every running sandbox whose time is up and returns the
// earliest expiry still ahead (zero if none).
func (s *Service) reapOnce() time.Time {
	ctx := context.Background()
	s.reapIdle(ctx)
	s.saveIdle(ctx, false)
	s.pruneAudit(ctx)
	now := s.now()
	if err := s.reapExpired(ctx, now); err != nil {
		s.log.Error("reaper: list expired sandboxes", "err", err)
		return time.Time{}
	}
	// One that could not be stopped is retried after ReapInterval, not
	// in a tight loop.
	next, err := s.st.NextExpiry(ctx, now)
	if err != nil {
		s.log.Error("reaper: next expiry", "err", err)
		return time.Time{}
	}
	return next
}

// reapExpired stops the running sandboxes whose deadline is past at now.
func (s *Service) reapExpired(ctx context.Context, now time.Time) error {
	expired, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running, ExpiredBy: now})
	if err != nil {
		return err
	}
	// A paused sandbox expires at the end of its max_paused_s.
	paused, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Paused, ExpiredBy: now})
	if err != nil {
		return err
	}
	expired = append(expired, paused...)
	for _, rec := range expired {
		if err := s.expire(ctx, rec.ID); err != nil {
			s.log.Error("reaper: stop expired sandbox", "sandbox", rec.ID, "err", err)
		}
	}
	return nil
}

// expire stops one sandbox if, under its lock, it is still running and
// still expired: a SetTimeout or Delete may have won the race.
func (s *Service) expire(ctx context.Context, id string) error {
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.st.GetSandbox(ctx, id)
	if err != nil {
		return fmt.Errorf("load sandbox: %w", err)
	}
	if !alive(rec.State) || rec.ExpiresAt.After(s.now()) {
		return nil
	}
	// It ended at its deadline, even when no daemon ran then to see it.
	rec.EndedAt = rec.ExpiresAt
	return s.stopLocked(ctx, Caller{}, rec, ReasonExpired)
}

// reconcile makes the store and the runtime agree after a daemon start:
// records of sandboxes the runtime lost become failed, and runtime
// sandboxes nobody owns any more are destroyed so they stop holding memory,
// disk and uid ranges.
func (s *Service) reconcile(ctx context.Context) error {
	if err := s.logCut(ctx); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	idle, err := s.st.IdleSince(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	for _, state := range []string{sandboxrec.Creating, sandboxrec.Running, sandboxrec.Paused} {
		recs, err := s.st.ListSandboxes(ctx, sandboxrec.Filter{State: state})
		if err != nil {
			return fmt.Errorf("reconcile: list %s sandboxes: %w", state, err)
		}
		for _, rec := range recs {
			if err := s.reattach(ctx, rec, idle[rec.ID]); err != nil {
				return err
			}
		}
	}
	// Deadlines and idle timers went on while no daemon ran: what is past
	// them is stopped before anyone is served.
	if err := s.reapExpired(ctx, s.now()); err != nil {
		return fmt.Errorf("reconcile: list expired sandboxes: %w", err)
	}
	s.reapIdle(ctx)
	ids, err := s.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: list runtime sandboxes: %w", err)
	}
	for _, id := range ids {
		if err := s.reclaim(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// reattach keeps a live record whose runtime sandbox answers, and marks it
// failed otherwise. A record left in creating by a crash mid-create is
// running if the runtime finished the job. Its idle timer goes on from
// lastUse, when saved (else it starts now).
func (s *Service) reattach(ctx context.Context, rec sandboxrec.Sandbox, lastUse time.Time) error {
	sb, err := s.rt.Get(ctx, rec.ID)
	if err != nil && errors.Is(err, runtime.ErrUnavailable) && alive(rec.State) && onNode(rec) {
		// Its node cannot be reached now: not lost to us yet. It shows
		// unreachable while its node is lost, runs on when the node is
		// back (NodeBack attaches it then), or fails past the grace.
		s.log.Warn("reconcile: sandbox's node unreachable; attached when it is back", "sandbox", rec.ID, "node", rec.Node, "err", err)
		s.unattachedMu.Lock()
		if s.unattached == nil {
			s.unattached = map[string]string{}
		}
		s.unattached[rec.ID] = rec.Node
		s.unattachedMu.Unlock()
		return nil
	}
	if err == nil && s.startCut(ctx, rec) {
		err = errStartCut
	}
	if err == nil {
		if nerr := s.reattachNetwork(ctx, rec, sb); nerr != nil {
			// Running without its proxy is running without network: worse
			// than failed, since nothing would say why.
			err = nerr
		}
	}
	if err == nil {
		if now := s.now(); lastUse.IsZero() || lastUse.After(now) {
			lastUse = now
		}
		s.meterResume(ctx, rec)
		if rec.State == sandboxrec.Paused {
			// Its agent is frozen: its work is adopted when it resumes.
			s.adoptLater.add(rec.ID)
		} else {
			s.idle.watch(rec.ID, time.Duration(rec.IdleTimeoutS)*time.Second, lastUse)
			s.work.Adopt(ctx, rec.ID, sb, adoptLog{s, rec})
		}
	}
	switch {
	case err == nil && alive(rec.State):
		return nil
	case err == nil:
		rec.State, rec.Node = sandboxrec.Running, runtime.NodeOf(s.rt, rec.ID)
	case errors.Is(err, runtime.ErrNotFound):
		rec.State, rec.Reason, rec.EndedAt = sandboxrec.Failed, ReasonLostOnRestart, s.now()
	default:
		// Present but unusable (its state cannot be read back): it is
		// lost to us all the same, and reclaim will destroy what is left.
		s.log.Error("reconcile: re-attach sandbox", "sandbox", rec.ID, "err", err)
		rec.State, rec.Reason, rec.EndedAt = sandboxrec.Failed, ReasonLostOnRestart+": "+err.Error(), s.now()
	}
	// Saved as failed, it loses its tokens in the same write.
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		return fmt.Errorf("reconcile: save sandbox %s: %w", rec.ID, err)
	}
	s.meterEnd(ctx, rec) // lost while no daemon ran: a no-op if it runs
	if rec.State == sandboxrec.Failed {
		s.auditor(Caller{}, rec.ID, rec.TenantID).record(audit.SandboxFailed, map[string]any{"reason": rec.Reason})
		s.audit.forget(rec.ID)
	}
	return nil
}

// reclaim destroys a runtime sandbox that has no live record.
func (s *Service) reclaim(ctx context.Context, id string) error {
	rec, err := s.st.GetSandbox(ctx, id)
	switch {
	case err == nil && (rec.State == sandboxrec.Creating || alive(rec.State)):
		return nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("reconcile: load sandbox %s: %w", id, err)
	}
	sb, err := s.rt.Get(ctx, id)
	if err == nil {
		err = sb.Destroy(ctx)
	}
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		// One stuck sandbox must not keep the daemon from starting.
		s.log.Error("reconcile: destroy orphaned sandbox", "sandbox", id, "err", err)
		return nil
	}
	s.log.Info("reconcile: destroyed orphaned sandbox", "sandbox", id)
	return nil
}
