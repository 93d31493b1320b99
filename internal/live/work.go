// Package live owns what runs inside a live sandbox beyond one request:
// background processes, commands streamed to clients as agent jobs,
// session shells and the terminals attached to them, their bounded output
// buffers, and following the agent jobs they run as, or adopting them
// again after a restart of the daemon. It keeps all of it in memory, per
// sandbox, until the sandbox ends (Drop) or the daemon does (Close: the
// jobs go on, for the next daemon to adopt).
//
// It must never check ownership or tenancy (internal/sandbox resolves the
// caller's sandbox first and hands over only what passed), never touch the
// store (what it records goes through the Recorder its caller gives), and
// never know about HTTP.
package live

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Host is what live work needs of the service that runs it, which owns
// the sandboxes, their records and their idle timers.
type Host interface {
	// Now is the service's clock.
	Now() time.Time
	// Hold keeps sandbox id from counting as idle until release runs.
	Hold(id string) (release func())
	// Touch counts sandbox id as used now.
	Touch(id string)
	// ExecError maps an error of the runtime from starting or running a
	// process in sandbox id (which may be gone, or stopped meanwhile).
	ExecError(ctx context.Context, id string, err error) error
	// Stopped says why a command broke off when sandbox id was stopped
	// meanwhile (deleted, expired, idle); nil when it was not.
	Stopped(ctx context.Context, id string) error
}

// Work is the live work of every sandbox of one service.
type Work struct {
	host Host
	log  *slog.Logger

	mu   sync.Mutex
	work map[string]*workload // by sandbox id

	// life ends at Close: the followers of jobs stop with it, and the
	// jobs go on.
	life      context.Context
	endLife   context.CancelFunc
	followers sync.WaitGroup
	// streamsEnd is closed when the server stops serving: clients that
	// follow output are let go (they follow again from the next daemon).
	streamsEnd chan struct{}
	endStreams sync.Once
}

// New returns the live work of a service; log receives what adopting jobs
// cannot return to a caller.
func New(h Host, log *slog.Logger) *Work {
	w := &Work{host: h, log: log, work: map[string]*workload{}, streamsEnd: make(chan struct{})}
	w.life, w.endLife = context.WithCancel(context.Background())
	return w
}

// EndStreams ends every follow of a process's or command's output, now
// and to come: the server is going away, and the processes are not.
func (w *Work) EndStreams() { w.endStreams.Do(func() { close(w.streamsEnd) }) }

// Close stops following jobs and waits until the followers have recorded
// what they read. The jobs go on, for the next daemon to adopt.
func (w *Work) Close() {
	w.endLife()
	w.followers.Wait()
}

// workload is what runs in one sandbox beyond one request: background
// processes, commands streamed to clients, and sessions.
type workload struct {
	mu       sync.Mutex
	procs    []*Proc             // in start order
	execs    []*Proc             // commands streamed to clients (exec_jobs.go)
	sessions map[string]*Session // by id
}

// workload returns sandbox id's workload; with create, a new one if it has
// none yet.
func (w *Work) workload(id string, create bool) *workload {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.work[id]
	if t == nil && create {
		t = &workload{sessions: map[string]*Session{}}
		w.work[id] = t
	}
	return t
}

// Drop forgets a stopped sandbox's workload and ends it: readers of
// background output learn the sandbox is gone, rather than seeing its
// destroy as an ordinary exit, and shells are closed.
func (w *Work) Drop(id string) {
	w.mu.Lock()
	t := w.work[id]
	delete(w.work, id)
	w.mu.Unlock()
	if t == nil {
		return
	}
	var recording []<-chan struct{}
	t.mu.Lock()
	now := w.host.Now()
	for _, p := range slices.Concat(t.procs, t.execs) {
		if p.stdin != nil {
			p.stdin.CloseWithError(errSandboxGone)
		}
		p.out.Finish(ended{ExecResult{}, errSandboxGone, now})
		recording = append(recording, p.stopFollowing()) // a job's follower records the end
	}
	for _, se := range t.sessions {
		se.tty.Finish(ended{ExecResult{}, errSandboxGone, now})
		se.close()
		se.end()
		recording = append(recording, se.stopFollowing())
	}
	t.mu.Unlock()
	// The ends recorded before the sandbox's own, so its log reads in
	// order; a follower stuck on an unreachable agent is not waited for.
	timeout := time.NewTimer(dropWait)
	defer timeout.Stop()
	for _, ch := range recording {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-timeout.C:
			return
		}
	}
}

// dropWait bounds how long Drop waits for followers to record the ends.
const dropWait = 5 * time.Second

// Busy says whether sandbox id has a background process running, its
// template's start command aside.
func (w *Work) Busy(id string) bool {
	t := w.workload(id, false)
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.procs {
		if p.tag == StartTag {
			continue
		}
		if _, done, _ := p.out.Status(); !done {
			return true
		}
	}
	return false
}
