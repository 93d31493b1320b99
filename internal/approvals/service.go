package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// Service opens, decides and lists approvals. It is safe for concurrent
// use.
type Service struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	waiters map[string]chan Approval // by id: where the final state goes, once
	// decideMu serializes decisions, so that two people deciding one
	// approval at once cannot both remember theirs (one allow-list entry
	// and one deny-list entry) while only one decision is stored.
	decideMu sync.Mutex
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = time.Second
	}
	return &Service{opts: opts, log: opts.Logger, waiters: map[string]chan Approval{}}
}

// Request is a question to open.
type Request struct {
	TenantID  string
	SandboxID string
	// What is asked: exactly one of these, which sets the kind.
	Egress   *Egress
	Command  *Command
	Harness  *Harness
	Deadline time.Time
}

// kind checks q asks exactly one bounded thing and says its kind.
func (q Request) kind() (string, error) {
	n, kind := 0, ""
	if q.Egress != nil {
		n, kind = n+1, KindEgress
	}
	if q.Command != nil {
		n, kind = n+1, KindCommand
		if q.Command.Text == "" || len(q.Command.Text) > MaxCommand || !utf8.ValidString(q.Command.Text) {
			return "", fmt.Errorf("%w: command: want 1 to %d bytes of UTF-8 text", errdefs.ErrInvalid, MaxCommand)
		}
	}
	if h := q.Harness; h != nil {
		n, kind = n+1, KindHarness
		if h.Tool == "" || len(h.Tool) > MaxTool || !utf8.ValidString(h.Tool) {
			return "", fmt.Errorf("%w: tool: want 1 to %d bytes of UTF-8 text", errdefs.ErrInvalid, MaxTool)
		}
		if len(h.Input) > MaxInput || len(h.Input) > 0 && !json.Valid(h.Input) {
			return "", fmt.Errorf("%w: input: want JSON of at most %d bytes", errdefs.ErrInvalid, MaxInput)
		}
	}
	if n != 1 || q.TenantID == "" || q.SandboxID == "" {
		return "", fmt.Errorf("%w: an approval needs a tenant, a sandbox and one thing asked", errdefs.ErrInvalid)
	}
	return kind, nil
}

// Waiter waits for one approval's decision.
type Waiter struct {
	s  *Service
	a  Approval
	ch chan Approval
}

// Approval is the approval as opened.
func (w *Waiter) Approval() Approval { return w.a }

// Open stores a pending approval, records approval.requested, and
// returns the waiter for its decision.
func (s *Service) Open(ctx context.Context, q Request) (*Waiter, error) {
	kind, err := q.kind()
	if err != nil {
		return nil, err
	}
	a := Approval{ID: newID(), TenantID: q.TenantID, SandboxID: q.SandboxID, Kind: kind,
		Egress: q.Egress, Command: q.Command, Harness: q.Harness, State: Pending, RequestedAt: s.opts.Now().UTC(), Deadline: q.Deadline.UTC()}
	if s.opts.TaskOf != nil {
		a.Task = s.opts.TaskOf(ctx, q.TenantID, q.SandboxID)
	}
	rec, err := toStore(a)
	if err != nil {
		return nil, err
	}
	w := &Waiter{s: s, a: a, ch: make(chan Approval, 1)}
	s.mu.Lock()
	s.waiters[a.ID] = w.ch
	s.mu.Unlock()
	if err := s.opts.Store.CreateApproval(context.WithoutCancel(ctx), rec); err != nil {
		s.forget(a.ID)
		return nil, fmt.Errorf("open approval: %w", err)
	}
	s.record(ctx, a, EventRequested, "")
	return w, nil
}

// Wait returns the approval once decided, or, when ctx ends first, marks
// it timed out (the deadline passed, or nobody waits any more) and
// returns it so; a decision that came in the meantime wins.
func (w *Waiter) Wait(ctx context.Context) (Approval, error) {
	defer w.s.forget(w.a.ID)
	// A decision taken in this process wakes the waiter at once; one
	// taken through another replica (one store, several processes) is
	// found in the store, looked at every PollEvery.
	tick := time.NewTicker(w.s.opts.PollEvery)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case a := <-w.ch:
			return a, nil
		case <-tick.C:
			if a, err := w.s.get(ctx, w.a.TenantID, w.a.ID); err == nil && a.State != Pending {
				return a, nil
			}
		case <-ctx.Done():
			done = true
		}
	}
	reason := "no decision by the deadline"
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "abandoned: the request it held ended before a decision"
	}
	return w.s.end(context.WithoutCancel(ctx), w.a, reason)
}

func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.waiters, id)
	s.mu.Unlock()
}

// wake hands a decided approval to its waiter in this process, if any.
func (s *Service) wake(a Approval) {
	s.mu.Lock()
	ch := s.waiters[a.ID]
	delete(s.waiters, a.ID)
	s.mu.Unlock()
	if ch != nil {
		ch <- a
	}
}

// end moves a pending approval to timed out and records it; one decided
// already is returned as it is.
func (s *Service) end(ctx context.Context, a Approval, reason string) (Approval, error) {
	a.State, a.DecidedAt, a.DecidedBy, a.Reason, a.Remember = TimedOut, s.opts.Now().UTC(), "", reason, ""
	rec, err := toStore(a)
	if err != nil {
		return Approval{}, err
	}
	switch err := s.opts.Store.DecideApproval(ctx, rec); {
	case errors.Is(err, errdefs.ErrConflict):
		return s.get(ctx, a.TenantID, a.ID)
	case err != nil:
		return Approval{}, fmt.Errorf("time out approval %s: %w", a.ID, err)
	}
	s.record(ctx, a, EventDecided, "")
	s.wake(a)
	return a, nil
}

func (s *Service) record(ctx context.Context, a Approval, typ, keyID string) {
	if s.opts.Record != nil {
		s.opts.Record(context.WithoutCancel(ctx), a, typ, keyID)
	}
}

// get reads an approval of the tenant as stored.
func (s *Service) get(ctx context.Context, tenantID, id string) (Approval, error) {
	rec, err := s.opts.Store.GetApproval(ctx, tenantID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return Approval{}, fmt.Errorf("%w: approval %s", errdefs.ErrNotFound, id)
	}
	if err != nil {
		return Approval{}, err
	}
	return fromStore(rec)
}

// expire times out a pending approval past its deadline: one whose
// waiter is gone (a daemon restarted) would otherwise stay pending.
func (s *Service) expire(ctx context.Context, a Approval) (Approval, error) {
	if a.State != Pending || s.opts.Now().Before(a.Deadline) {
		return a, nil
	}
	return s.end(ctx, a, "no decision by the deadline")
}

// Get returns the caller's tenant's approval.
func (s *Service) Get(ctx context.Context, c Caller, id string) (Approval, error) {
	a, err := s.get(ctx, c.TenantID, id)
	if err != nil {
		return Approval{}, err
	}
	return s.expire(ctx, a)
}

// List returns the caller's tenant's approvals in state ("" for all),
// oldest first.
func (s *Service) List(ctx context.Context, c Caller, state string) ([]Approval, error) {
	switch state {
	case "", Pending, Allowed, Denied, TimedOut:
	default:
		return nil, fmt.Errorf("%w: state: want pending, allowed, denied or timed_out, not %q", errdefs.ErrInvalid, state)
	}
	recs, err := s.opts.Store.ListApprovals(ctx, c.TenantID, state)
	if err != nil {
		return nil, err
	}
	out := make([]Approval, 0, len(recs))
	for _, r := range recs {
		a, err := fromStore(r)
		if err == nil {
			a, err = s.expire(ctx, a)
		}
		if err != nil {
			return nil, err
		}
		if state == "" || a.State == state {
			out = append(out, a)
		}
	}
	return out, nil
}

// Decide allows or denies a pending approval of the caller's tenant. A
// sandbox token may not decide (ErrForbidden): an agent must not approve
// its own request.
func (s *Service) Decide(ctx context.Context, c Caller, id string, d Decision) (Approval, error) {
	if c.KeyID == "" {
		return Approval{}, fmt.Errorf("%w: a sandbox token cannot decide an approval; use an API key", errdefs.ErrForbidden)
	}
	switch d.Remember {
	case "":
		d.Remember = RememberOnce
	case RememberOnce, RememberSandbox, RememberTask:
	default:
		return Approval{}, fmt.Errorf("%w: remember: want once, sandbox or task, not %q", errdefs.ErrInvalid, d.Remember)
	}
	s.decideMu.Lock()
	defer s.decideMu.Unlock()
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return Approval{}, err
	}
	if a.State != Pending {
		return Approval{}, fmt.Errorf("%w: approval %s is %s already", errdefs.ErrConflict, id, a.State)
	}
	a.State, a.DecidedAt, a.DecidedBy, a.Reason, a.Remember = Denied, s.opts.Now().UTC(), c.KeyID, d.Reason, d.Remember
	if d.Allow {
		a.State = Allowed
	}
	if a.Remember != RememberOnce && s.opts.Remember != nil {
		if err := s.opts.Remember(ctx, a, c.KeyID); err != nil {
			return Approval{}, fmt.Errorf("remember approval %s: %w", id, err)
		}
	}
	rec, err := toStore(a)
	if err != nil {
		return Approval{}, err
	}
	if err := s.opts.Store.DecideApproval(context.WithoutCancel(ctx), rec); err != nil {
		if errors.Is(err, errdefs.ErrConflict) {
			return Approval{}, fmt.Errorf("%w: approval %s was decided meanwhile", errdefs.ErrConflict, id)
		}
		return Approval{}, err
	}
	s.record(ctx, a, EventDecided, c.KeyID)
	s.wake(a)
	return a, nil
}
