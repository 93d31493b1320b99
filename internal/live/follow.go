package live

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// errStopped is why followJob returns when its context ends: the service
// closes (the job goes on, for the next daemon), or the sandbox is gone.
var errStopped = errors.New("stopped following")

// followJob attaches to job pid as mode says, from next() on, again after
// each broken attach, until the job ends (its status), it is gone or
// attaches keep failing (why), or ctx ends (errStopped). A sandbox that
// cannot be reached (a node restarting, or lost for a while) is tried for
// longer than one that answers with errors: about 7 minutes, past a lost
// node's grace period, after which its sandbox fails and ctx ends.
func followJob(ctx context.Context, jr runtime.JobRunner, pid int, next func() int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.ExitStatus, error) {
	backoff := 50 * time.Millisecond
	for failures, unreachable := 0, 0; ; {
		end, err := jr.Attach(ctx, pid, next(), mode, out)
		switch {
		case err == nil && end.Exit != nil:
			return *end.Exit, nil
		case ctx.Err() != nil:
			return runtime.ExitStatus{}, errStopped
		case errors.Is(err, runtime.ErrNotFound), failures >= 20, unreachable >= 200:
			return runtime.ExitStatus{}, err
		}
		switch {
		case errors.Is(err, runtime.ErrUnavailable):
			unreachable++
		case err != nil:
			failures++
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// following is how Drop reaches what follows a process or a shell: stop
// ends it early (the sandbox is gone), done closes once it has recorded
// the end.
type following struct {
	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

func (f *following) set(stop context.CancelFunc, done chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop, f.done = stop, done
}

// stopFollowing ends the follower, if there is one, and returns what
// closes once it has recorded the end (nil when nothing records it).
func (f *following) stopFollowing() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop != nil {
		f.stop()
	}
	return f.done
}

// goFollow runs follow in a follower goroutine under the service's life,
// f's stop and done set before it starts, so a Drop at any time after
// waits for what it records.
func (w *Work) goFollow(f *following, follow func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(w.life)
	done := make(chan struct{})
	f.set(cancel, done)
	w.followers.Add(1)
	go func() {
		defer w.followers.Done()
		defer close(done)
		follow(ctx)
	}()
}

// goFollowProc starts p's follower (follow).
func (w *Work) goFollowProc(p *Proc, rec CommandRecorder, audited int64) {
	w.goFollow(&p.following, func(ctx context.Context) { w.follow(ctx, p, rec, audited) })
}

// Adopt follows again the background processes, commands and session
// shells that sandbox id's agent kept while no daemon was connected,
// recording into log from where an earlier daemon left off. Called while
// reconciling at start, before the daemon serves.
func (w *Work) Adopt(ctx context.Context, id string, sb runtime.Sandbox, log Log) {
	jr, ok := sb.(runtime.JobRunner)
	if !ok {
		return
	}
	jobs, err := jr.Jobs(ctx)
	if err != nil {
		if !errors.Is(err, runtime.ErrUnsupported) {
			w.log.Warn("reconcile: list the sandbox's processes", "sandbox", id, "err", err)
		}
		return
	}
	var audited map[string]int64
	t := w.workload(id, true)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range jobs {
		var kind struct {
			Kind string `json:"kind"`
		}
		json.Unmarshal(j.Meta, &kind)
		if kind.Kind == metaSession {
			var m sessionMeta
			if json.Unmarshal(j.Meta, &m) == nil {
				w.adoptSession(ctx, id, sb, jr, t, j, m, log)
			}
			continue
		}
		var m procMeta
		if json.Unmarshal(j.Meta, &m) != nil || (m.Kind != metaProc && m.Kind != metaExec) {
			continue
		}
		if audited == nil {
			audited = log.CommandOutput(ctx)
		}
		rec := log.As(m.Actor).Command(m.ExecID)
		if m.Kind == metaExec {
			w.adoptExec(jr, t, j, m, rec, audited[m.ExecID])
			continue
		}
		if len(t.procs) >= MaxBackground {
			continue
		}
		p := &Proc{pid: j.Pid, tag: m.Tag, execID: m.ExecID, command: m.Command, started: j.Started,
			out: newOutBuf(ProcOutputCap), jobs: jr}
		t.procs = append(t.procs, p)
		w.goFollowProc(p, rec, audited[m.ExecID])
	}
}
