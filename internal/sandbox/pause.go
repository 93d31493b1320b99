package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// A paused sandbox's processes are frozen (the cgroup freezer): they keep
// their memory, use no CPU, and its lifetime clock stops. While paused its
// ExpiresAt is the end of its max_paused_s, and what was left of its
// lifetime waits in its lifecycle until it resumes. Paused stays paused
// across a daemon restart: the freezer's state is the kernel's.

// DefaultMaxPaused and MaxMaxPaused bound how long a sandbox may stay
// paused (max_paused_s) before it is destroyed as expired.
const (
	DefaultMaxPaused = 7 * 24 * time.Hour
	MaxMaxPaused     = 30 * 24 * time.Hour
)

// The idle actions.
const (
	IdleDestroy = "destroy"
	IdlePause   = "pause"
)

// lifecycle is sandboxrec.Sandbox.Lifecycle: the pause, snapshot, fork and
// volume settings and state of a sandbox.
type lifecycle struct {
	AutoResume bool   `json:"auto_resume,omitempty"`
	IdleAction string `json:"idle_action,omitempty"`
	MaxPausedS int64  `json:"max_paused_s,omitempty"`
	// PausedAt is when it was paused (zero while running); LifeLeftNS
	// what was left of its lifetime then.
	PausedAt   time.Time `json:"paused_at,omitzero"`
	LifeLeftNS int64     `json:"life_left_ns,omitempty"`
	// Snapshot is the snapshot it was made from, ForkOf the sandbox it
	// was forked from.
	Snapshot string        `json:"snapshot,omitempty"`
	ForkOf   string        `json:"fork_of,omitempty"`
	Volumes  []VolumeMount `json:"volumes,omitempty"`
	// Transfer is how its snapshot came from another node,
	// VolumeTransfers how its volumes moved to its node.
	Transfer        *SnapshotTransfer `json:"transfer,omitempty"`
	VolumeTransfers []VolumeTransfer  `json:"volume_transfers,omitempty"`
	// Budget caps its spending on model calls (model_usage.go).
	Budget *Budget `json:"budget,omitempty"`
}

// SnapshotTransfer says that a sandbox's snapshot was streamed from the
// node that keeps it to the one that had room, and what that cost.
type SnapshotTransfer struct {
	From       string `json:"from_node"`
	To         string `json:"to_node"`
	Bytes      int64  `json:"bytes"`
	DurationMS int64  `json:"duration_ms"`
	Resumed    int    `json:"resumed,omitempty"` // times the stream was cut and picked up again
}

// Lifecycle is a sandbox's lifecycle settings and state, as the API shows
// them.
type Lifecycle struct {
	AutoResume bool          `json:"auto_resume"`
	IdleAction string        `json:"idle_action"`
	MaxPausedS int64         `json:"max_paused_s"`
	PausedAt   time.Time     `json:"paused_at,omitzero"`
	Snapshot   string        `json:"snapshot,omitempty"`
	ForkOf     string        `json:"fork_of,omitempty"`
	Volumes    []VolumeMount `json:"volumes"`
	// SnapshotTransfer, when set, says the create streamed its snapshot
	// from another node, and how long that took.
	SnapshotTransfer *SnapshotTransfer `json:"snapshot_transfer,omitempty"`
	// VolumeTransfers, when set, say the create moved its volumes from
	// their node, which had no room, to the sandbox's.
	VolumeTransfers []VolumeTransfer `json:"volume_transfers,omitempty"`
	// Budget caps its model calls' spending (model_usage.go).
	Budget *Budget `json:"budget,omitempty"`
}

// LifecycleOf reads rec's lifecycle, with defaults filled in.
func LifecycleOf(rec sandboxrec.Sandbox) Lifecycle {
	l := lifecycleOf(rec)
	out := Lifecycle{AutoResume: l.AutoResume, IdleAction: l.IdleAction, MaxPausedS: l.MaxPausedS,
		PausedAt: l.PausedAt, Snapshot: l.Snapshot, ForkOf: l.ForkOf, Volumes: l.Volumes, SnapshotTransfer: l.Transfer, VolumeTransfers: l.VolumeTransfers,
		Budget: l.Budget}
	if out.IdleAction == "" {
		out.IdleAction = IdleDestroy
	}
	if out.MaxPausedS == 0 {
		out.MaxPausedS = int64(DefaultMaxPaused / time.Second)
	}
	if out.Volumes == nil {
		out.Volumes = []VolumeMount{}
	}
	return out
}

func lifecycleOf(rec sandboxrec.Sandbox) lifecycle {
	var l lifecycle
	if rec.Lifecycle != "" {
		// Written by this package: a record that does not decode has
		// none of these settings, which is what it would have had.
		json.Unmarshal([]byte(rec.Lifecycle), &l)
	}
	return l
}

func (l lifecycle) encode() string {
	if l.AutoResume == false && l.IdleAction == "" && l.MaxPausedS == 0 && l.PausedAt.IsZero() &&
		l.Snapshot == "" && l.ForkOf == "" && len(l.Volumes) == 0 && l.Transfer == nil && len(l.VolumeTransfers) == 0 &&
		l.Budget == nil {
		return ""
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func (l lifecycle) maxPaused() time.Duration {
	if l.MaxPausedS > 0 {
		return time.Duration(l.MaxPausedS) * time.Second
	}
	return DefaultMaxPaused
}

// pausedError refuses a call on a paused sandbox: ErrConflict and
// ErrPaused match it.
type pausedError string

func (e pausedError) Error() string { return string(e) }
func (e pausedError) Is(target error) bool {
	return target == ErrConflict || target == ErrPaused
}

// Pause freezes a running sandbox; pausing a paused one changes nothing.
func (s *Service) Pause(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if rec.State == sandboxrec.Paused {
		return s.view(rec), nil
	}
	if err := notRunning(rec); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	return s.pauseLocked(context.WithoutCancel(ctx), c, rec, "request")
}

// pauseLocked pauses rec, the caller holding its lock.
func (s *Service) pauseLocked(ctx context.Context, c Caller, rec sandboxrec.Sandbox, reason string) (sandboxrec.Sandbox, error) {
	p, err := s.pauser(ctx, rec.ID)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if err := p.Pause(ctx); err != nil {
		return sandboxrec.Sandbox{}, s.runtimeError(ctx, rec.ID, "pause", err)
	}
	now := s.now()
	l := lifecycleOf(rec)
	l.PausedAt, l.LifeLeftNS = now, int64(max(rec.ExpiresAt.Sub(now), 0))
	rec.State, rec.ExpiresAt, rec.Lifecycle = sandboxrec.Paused, now.Add(l.maxPaused()), l.encode()
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		// Left frozen with a record that says running, every call would
		// hang: thaw it.
		if rerr := p.Resume(ctx); rerr != nil {
			s.log.Error("resume sandbox after failed pause", "sandbox", rec.ID, "err", rerr)
		}
		return sandboxrec.Sandbox{}, fmt.Errorf("save sandbox %s: %w", rec.ID, err)
	}
	s.idle.forget(rec.ID)
	s.wakeReaper(rec.ExpiresAt)
	s.auditor(c, rec.ID, rec.TenantID).record(audit.SandboxPaused, map[string]any{"reason": reason})
	return s.view(rec), nil
}

// Resume thaws a paused sandbox; resuming a running one changes nothing.
func (s *Service) Resume(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if rec.State == sandboxrec.Running {
		return s.view(rec), nil
	}
	if rec.State != sandboxrec.Paused {
		return sandboxrec.Sandbox{}, notRunning(rec)
	}
	return s.resumeLocked(context.WithoutCancel(ctx), c, rec, "request")
}

// resumeLocked resumes rec, the caller holding its lock.
func (s *Service) resumeLocked(ctx context.Context, c Caller, rec sandboxrec.Sandbox, reason string) (sandboxrec.Sandbox, error) {
	p, err := s.pauser(ctx, rec.ID)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if err := p.Resume(ctx); err != nil {
		return sandboxrec.Sandbox{}, s.runtimeError(ctx, rec.ID, "resume", err)
	}
	now := s.now()
	l := lifecycleOf(rec)
	paused := now.Sub(l.PausedAt)
	rec.State, rec.ExpiresAt = sandboxrec.Running, now.Add(time.Duration(l.LifeLeftNS))
	l.PausedAt, l.LifeLeftNS = time.Time{}, 0
	rec.Lifecycle = l.encode()
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		if perr := p.Pause(ctx); perr != nil {
			s.log.Error("pause sandbox again after failed resume", "sandbox", rec.ID, "err", perr)
		}
		return sandboxrec.Sandbox{}, fmt.Errorf("save sandbox %s: %w", rec.ID, err)
	}
	s.idle.watch(rec.ID, time.Duration(rec.IdleTimeoutS)*time.Second, now)
	s.wakeReaper(rec.ExpiresAt)
	if s.adoptLater.take(rec.ID) {
		if sb, err := s.rt.Get(ctx, rec.ID); err == nil {
			s.work.Adopt(ctx, rec.ID, sb, adoptLog{s, rec})
		}
	}
	s.auditor(c, rec.ID, rec.TenantID).record(audit.SandboxResumed,
		map[string]any{"reason": reason, "paused_ms": paused.Milliseconds()})
	return s.view(rec), nil
}

// pauser is the runtime side of sandbox id, which must be able to pause.
func (s *Service) pauser(ctx context.Context, id string) (runtime.Pauser, error) {
	sb, err := s.rt.Get(ctx, id)
	if err != nil {
		return nil, s.runtimeError(ctx, id, "pause", err)
	}
	p, ok := sb.(runtime.Pauser)
	if !ok {
		return nil, fmt.Errorf("%w: this runtime cannot pause sandboxes", ErrUnavailable)
	}
	return p, nil
}

// runtimeError maps a runtime failure of an operation on sandbox id.
func (s *Service) runtimeError(ctx context.Context, id, op string, err error) error {
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		if lost, ok := s.lostError(ctx, id, err); ok {
			return lost
		}
		return fmt.Errorf("%w: %s sandbox %s: %v", ErrNotFound, op, id, err)
	case errors.Is(err, runtime.ErrInvalid):
		return fmt.Errorf("%w: %s sandbox %s: %v", ErrInvalid, op, id, err)
	case errors.Is(err, runtime.ErrConflict):
		return fmt.Errorf("%w: %s sandbox %s: %v", ErrConflict, op, id, err)
	}
	return fmt.Errorf("%w: %s sandbox %s: %v", ErrUnavailable, op, id, err)
}

// awake is rec running: a paused sandbox created with auto_resume is
// resumed first; any other is refused with ErrPaused.
func (s *Service) awake(ctx context.Context, c Caller, rec sandboxrec.Sandbox) (sandboxrec.Sandbox, error) {
	if rec.State != sandboxrec.Paused {
		return rec, nil
	}
	if !lifecycleOf(rec).AutoResume {
		return rec, pausedError(fmt.Sprintf("sandbox %s is paused: resume it first (POST /v1/sandboxes/%s/resume), or create it with auto_resume", rec.ID, rec.ID))
	}
	unlock := s.locks.lock(rec.ID)
	defer unlock()
	cur, err := s.st.GetSandbox(ctx, rec.ID)
	if err != nil {
		return rec, fmt.Errorf("load sandbox %s: %w", rec.ID, err)
	}
	if cur.State != sandboxrec.Paused {
		return cur, nil // resumed (or stopped) meanwhile
	}
	return s.resumeLocked(context.WithoutCancel(ctx), c, cur, "auto")
}

// idSet is a set of sandbox ids, safe for concurrent use.
type idSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *idSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[id] = true
}

// take removes id and says whether it was there.
func (s *idSet) take(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.m[id]
	delete(s.m, id)
	return ok
}
