package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// ReasonIdle is the reason of a sandbox stopped by its idle timeout.
const ReasonIdle = "idle"

// idleTracker knows when each sandbox with an idle timeout was last used.
// Any call on the sandbox is use; so is any moment in which a command runs
// (foreground or background) or an output stream is open. It lives in
// memory, and is saved to the store every idleSaveEvery and when the
// service closes: a daemon that starts goes on from the saved last use
// (after a kill -9, up to idleSaveEvery of use may be missing from it).
type idleTracker struct {
	mu    sync.Mutex
	subs  map[string]*idleState
	saved time.Time // when unsaved last ran
}

type idleState struct {
	timeout time.Duration
	last    time.Time
	busy    int       // commands running and streams open
	saved   time.Time // the last use the store has
}

// idleSaveEvery is how often the idle timers are saved.
const idleSaveEvery = 2 * time.Second

// unsaved returns the last use of each sandbox that changed since it was
// last saved (now, for one in use now), and takes them as saved; nil
// unless force or idleSaveEvery has passed.
func (t *idleTracker) unsaved(now time.Time, force bool) map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !force && now.Sub(t.saved) < idleSaveEvery {
		return nil
	}
	t.saved = now
	var out map[string]time.Time
	for id, st := range t.subs {
		last := st.last
		if st.busy > 0 {
			last = now
		}
		if last.After(st.saved) {
			if out == nil {
				out = map[string]time.Time{}
			}
			out[id], st.saved = last, last
		}
	}
	return out
}

// saveIdle saves the idle timers that changed, when it is time to or with
// force.
func (s *Service) saveIdle(ctx context.Context, force bool) {
	if last := s.idle.unsaved(s.now(), force); len(last) > 0 {
		if err := s.st.SaveIdle(ctx, last); err != nil {
			s.log.Warn("save idle timers", "err", err)
		}
	}
}

// watch starts tracking a sandbox last used at since.
func (t *idleTracker) watch(id string, timeout time.Duration, since time.Time) {
	if timeout <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subs == nil {
		t.subs = map[string]*idleState{}
	}
	t.subs[id] = &idleState{timeout: timeout, last: since}
}

func (t *idleTracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.subs, id)
}

func (t *idleTracker) touch(id string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.subs[id]; st != nil && now.After(st.last) {
		st.last = now
	}
}

// hold marks the sandbox busy until the returned func runs.
func (t *idleTracker) hold(id string, now func() time.Time) func() {
	t.mu.Lock()
	st := t.subs[id]
	if st != nil {
		st.busy++
	}
	t.mu.Unlock()
	if st == nil {
		return func() {}
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		st.busy--
		if n := now(); n.After(st.last) {
			st.last = n
		}
	}
}

// idle returns the sandboxes idle past their timeout at now, skipping
// those for which busy says otherwise (background processes running).
func (t *idleTracker) idle(now time.Time, busy func(id string) bool) []string {
	t.mu.Lock()
	var ids []string
	for id, st := range t.subs {
		if st.busy == 0 && now.Sub(st.last) >= st.timeout {
			ids = append(ids, id)
		}
	}
	t.mu.Unlock()
	out := ids[:0]
	for _, id := range ids {
		if busy(id) {
			t.touch(id, now)
			continue
		}
		out = append(out, id)
	}
	return out
}

// reapIdle stops sandboxes idle past their timeout.
func (s *Service) reapIdle(ctx context.Context) {
	for _, id := range s.idle.idle(s.now(), s.work.Busy) {
		unlock := s.locks.lock(id)
		rec, err := s.st.GetSandbox(ctx, id)
		if err == nil && rec.State == sandboxrec.Running {
			if lifecycleOf(rec).IdleAction == IdlePause {
				_, err = s.pauseLocked(ctx, Caller{}, rec, "idle")
			} else {
				err = s.stopLocked(ctx, Caller{}, rec, ReasonIdle)
			}
		}
		unlock()
		if err != nil {
			s.log.Error("reaper: stop idle sandbox", "sandbox", id, "err", err)
			continue
		}
		s.idle.forget(id)
	}
}
