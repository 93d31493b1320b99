// Package tasks runs agent harnesses (Codex CLI, Claude Code, any command)
// as tasks: each in a sandbox created for it and destroyed after it, its
// output turned into one normalized event stream, its workspace changes
// and artifacts kept. It reaches sandboxes only through the sandbox
// layer's methods it names (Sandboxes) with the task's own tenant as the
// caller, so a task can never do what
// its tenant could not (quotas, secrets, allow-lists, ownership), and it
// must never answer one tenant with another tenant's task: every lookup
// treats a foreign task as one that does not exist. Its stored records
// are package taskrec's, a leaf the stores can import, and it persists
// them through its own narrow Store.
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// Options tunes a Service. Zero fields take defaults.
type Options struct {
	// Concurrency is how many tasks of one tenant run at once when the
	// tenant has no sandbox quota (max_sandboxes 0); a tenant with one
	// runs up to its quota. Default 4.
	Concurrency int
	// HasTemplate says whether the server has a sandbox template; default:
	// the manager's Template.
	HasTemplate func(name string) bool
	// Box seals the env values of stored tasks; nil stores them as they
	// are.
	Box    *secrets.Box
	Logger *slog.Logger
	Now    func() time.Time
	// Tracer exports each ended task as a trace (trace.go); nil: none.
	Tracer trace.Tracer
	// Approvals opens the approvals a task's sandbox asks for
	// (approval.go); nil: its questions are refused.
	Approvals *approvals.Service
}

// Task is a task as the API shows it.
type Task struct {
	taskrec.Task
	Request Request
	// Attempts are its tries; Usage what they used and cost.
	Attempts []Attempt
	Usage    Usage
}

// Service queues and runs tasks. It owns the goroutines of running tasks
// (stopped by Close) but neither the store nor the manager.
type Service struct {
	st   Store
	m    Sandboxes
	opts Options
	log  *slog.Logger
	q    *queue

	mu      sync.Mutex
	running map[string]*runState // by task id
	wake    map[string]chan struct{}
	logs    map[string]*eventLog // of running tasks, by task id
	// bySandbox finds a running task by its sandbox (usage.go).
	bySandbox map[string]string
	// streamsEnd is closed when the server stops serving: followers end
	// (their clients follow again from the next daemon).
	streamsEnd chan struct{}
	// sweepStop ends the kept workspaces' sweeper (continuation.go).
	sweepStop chan struct{}
	sweeping  sync.WaitGroup
	closed    bool
	wg        sync.WaitGroup
}

type runState struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// eventLog is what emit keeps of a running task's events.
type eventLog struct {
	seq  int64 // the newest stored
	skip int   // how many of the next to drop (resume.go)
}

// Causes of a task's context ending early.
var (
	errCancelled = errors.New("cancelled")
	errShutdown  = errors.New("daemon stopped") // the task goes on under the next
)

// New starts the service: tasks an earlier daemon was running go on
// (resume.go), ahead of the queue and each in a slot of its tenant's;
// queued tasks queue again, in submission order.
func New(ctx context.Context, st Store, m Sandboxes, opts Options) (*Service, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.HasTemplate == nil {
		opts.HasTemplate = func(name string) bool {
			_, err := m.Template(context.Background(), name)
			return err == nil
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{st: st, m: m, opts: opts, log: opts.Logger,
		running: map[string]*runState{}, wake: map[string]chan struct{}{}, logs: map[string]*eventLog{},
		bySandbox:  map[string]string{},
		streamsEnd: make(chan struct{}), sweepStop: make(chan struct{})}
	s.q = newQueue(s.limit, s.start)
	left, err := st.ListTasks(ctx, taskrec.Filter{States: []string{taskrec.Queued, taskrec.Running}})
	if err != nil {
		return nil, fmt.Errorf("recover tasks: %w", err)
	}
	var queued []taskrec.Task
	for _, t := range left {
		if t.State == taskrec.Running {
			s.q.resume(t.TenantID, t.ID)
			continue
		}
		queued = append(queued, t)
	}
	// ListTasks orders by id; the queue's order is submission order.
	sortByCreated(queued)
	for _, t := range queued {
		s.q.submit(t.TenantID, t.ID)
	}
	s.sweeping.Add(1)
	go func() {
		defer s.sweeping.Done()
		s.sweepWorkspaces(s.sweepStop)
	}()
	return s, nil
}

// limit is how many tasks of the tenant may run at once.
func (s *Service) limit(tenant string) int {
	t, err := s.st.GetTenant(context.Background(), tenant)
	if err == nil && t.MaxSandboxes > 0 {
		return t.MaxSandboxes
	}
	return s.opts.Concurrency
}

// Close stops running tasks here and waits for their goroutines. The
// tasks do not stop: their harnesses go on in their sandboxes, and the
// next daemon goes on with them from the progress they saved (a task
// still being set up starts again). Queued tasks stay queued.
func (s *Service) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.sweepStop)
	}
	s.closed = true
	for _, r := range s.running {
		r.cancel(errShutdown)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.sweeping.Wait()
	return nil
}

// EndStreams ends every Follow, now and to come: the server is going
// away, and a follower's client follows the task again from the next.
func (s *Service) EndStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.streamsEnd:
	default:
		close(s.streamsEnd)
	}
}

// Submit validates req, stores the task queued and queues it.
func (s *Service) Submit(ctx context.Context, c sandbox.Caller, req Request) (Task, error) {
	if err := s.resolveContinue(ctx, c, &req); err != nil {
		return Task{}, err
	}
	if err := req.validate(s.opts.HasTemplate); err != nil {
		return Task{}, err
	}
	b := make([]byte, 12)
	rand.Read(b)
	t := taskrec.Task{ID: "tsk_" + hex.EncodeToString(b), TenantID: c.TenantID, KeyID: c.KeyID,
		Harness: req.Harness, State: taskrec.Queued, CreatedAt: s.opts.Now().UTC()}
	// A sandbox that could never be had (limits past the host or the
	// tenant's quota, an unknown secret, a bad allow-list) is refused now,
	// not after the task waited in the queue.
	if err := s.m.Check(ctx, c, sandboxRequest(req, harnesses[req.Harness], t.ID)); err != nil {
		return Task{}, err
	}
	sp, err := s.seal(t, req)
	if err != nil {
		return Task{}, err
	}
	t.Spec = sp
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return Task{}, fmt.Errorf("%w: the server is shutting down", sandbox.ErrUnavailable)
	}
	if err := s.st.CreateTask(ctx, t); err != nil {
		return Task{}, err
	}
	s.q.submit(t.TenantID, t.ID)
	return Task{Task: t, Request: req}, nil
}

// Get returns the caller's task.
func (s *Service) Get(ctx context.Context, c sandbox.Caller, id string) (Task, error) {
	t, err := s.own(ctx, c, id)
	if err != nil {
		return Task{}, err
	}
	return s.view(ctx, t)
}

// view is t as the API shows it: its request (sealed env values read as
// ""), its attempts, and what they used.
func (s *Service) view(ctx context.Context, t taskrec.Task) (Task, error) {
	d, err := decode(t)
	if err != nil {
		return Task{}, err
	}
	d.Attempts = attemptsOf(t)
	d.Usage = s.usage(ctx, t, d.Attempts)
	return d, nil
}

// own reads the task, answering ErrNotFound for another tenant's.
func (s *Service) own(ctx context.Context, c sandbox.Caller, id string) (taskrec.Task, error) {
	t, err := s.st.GetTask(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) || err == nil && t.TenantID != c.TenantID {
		return taskrec.Task{}, fmt.Errorf("%w: task %q", sandbox.ErrNotFound, id)
	}
	return t, err
}

// spec is a task's request as the store keeps it. With a master key its
// env values (which may be credentials, though secrets are the way to
// pass those) are sealed, bound to the task and tenant, and only their
// names stay readable.
type spec struct {
	Request
	SealedEnv []byte   `json:"sealed_env,omitempty"`
	EnvNames  []string `json:"env_names,omitempty"`
}

func envAD(t taskrec.Task) []byte { return []byte("task-env\x00" + t.TenantID + "\x00" + t.ID) }

// seal encodes req as t's stored spec.
func (s *Service) seal(t taskrec.Task, req Request) (string, error) {
	sp := spec{Request: req}
	if s.opts.Box != nil && len(req.Env) > 0 {
		env, err := json.Marshal(req.Env)
		if err != nil {
			return "", fmt.Errorf("encode task: %w", err)
		}
		sp.SealedEnv = s.opts.Box.Seal(env, envAD(t))
		sp.EnvNames = slices.Sorted(maps.Keys(req.Env))
		sp.Env = nil
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return "", fmt.Errorf("encode task: %w", err)
	}
	return string(b), nil
}

func readSpec(t taskrec.Task) (spec, error) {
	var sp spec
	if err := json.Unmarshal([]byte(t.Spec), &sp); err != nil {
		return sp, fmt.Errorf("task %s: decode spec: %w", t.ID, err)
	}
	return sp, nil
}

// decode reads t's spec for display: sealed env values read as "".
func decode(t taskrec.Task) (Task, error) {
	sp, err := readSpec(t)
	if err != nil {
		return Task{}, err
	}
	if sp.SealedEnv != nil {
		sp.Env = map[string]string{}
		for _, k := range sp.EnvNames {
			sp.Env[k] = ""
		}
	}
	return Task{Task: t, Request: sp.Request}, nil
}

// decodeToRun reads t's spec with its env values, to run it.
func (s *Service) decodeToRun(t taskrec.Task) (Task, error) {
	sp, err := readSpec(t)
	if err != nil {
		return Task{}, err
	}
	if sp.SealedEnv != nil {
		if s.opts.Box == nil {
			return Task{}, fmt.Errorf("task %s: its env is sealed and this server has no master key", t.ID)
		}
		env, err := s.opts.Box.Open(sp.SealedEnv, envAD(t))
		if err == nil {
			err = json.Unmarshal(env, &sp.Env)
		}
		if err != nil {
			return Task{}, fmt.Errorf("task %s: open its env: %w", t.ID, err)
		}
	}
	return Task{Task: t, Request: sp.Request}, nil
}

// List returns the caller's tasks f selects (its TenantID is the
// caller's).
func (s *Service) List(ctx context.Context, c sandbox.Caller, f taskrec.Filter) ([]Task, error) {
	f.TenantID = c.TenantID
	list, err := s.st.ListTasks(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(list))
	for _, t := range list {
		d, err := s.view(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Position is how many of the tenant's tasks wait before a queued one
// (-1 when it does not wait).
func (s *Service) Position(t Task) int { return s.q.position(t.TenantID, t.ID) }

// Cancel stops the caller's task: a queued one ends at once, a running
// one is killed and its sandbox destroyed; Cancel waits (at most 10 s)
// for that. A task that already ended is returned as it is.
func (s *Service) Cancel(ctx context.Context, c sandbox.Caller, id string) (Task, error) {
	t, err := s.own(ctx, c, id)
	if err != nil {
		return Task{}, err
	}
	// A task admitted but not yet registered as running is neither
	// waiting nor running for a moment: look again.
	for range 50 {
		if s.q.remove(t.TenantID, t.ID) {
			s.finish(ctx, &t, taskrec.Cancelled, "cancelled while queued", "", nil)
			return decode(t)
		}
		s.mu.Lock()
		r := s.running[id]
		s.mu.Unlock()
		if r != nil {
			r.cancel(errCancelled)
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
				return Task{}, ctx.Err()
			}
			break
		}
		if t, err = s.st.GetTask(ctx, id); err != nil || t.State != taskrec.Queued && t.State != taskrec.Running {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s.Get(ctx, c, id)
}

// start runs an admitted task of the tenant in its own goroutine, which
// frees the tenant's slot when the task has ended.
func (s *Service) start(tenant, id string) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &runState{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(errShutdown)
		return
	}
	s.running[id] = r
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.run(ctx, id)
		cancel(nil)
		s.mu.Lock()
		delete(s.running, id)
		delete(s.logs, id)
		s.mu.Unlock()
		close(r.done)
		s.q.done(tenant)
	}()
}

func sortByCreated(ts []taskrec.Task) {
	slices.SortStableFunc(ts, func(a, b taskrec.Task) int { return a.CreatedAt.Compare(b.CreatedAt) })
}
