package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/store"
)

// A background process runs as a job of the sandbox's agent when its
// runtime has them: the agent keeps it running and keeps its output while
// no daemon is connected, so a restart, a crash or an upgrade of the
// daemon loses neither. The daemon follows each job (follow): its output
// goes into the process's buffer, which readers are served from, and into
// the audit log; at start, a daemon lists the jobs of every sandbox it
// re-attaches and follows them again (adoptJobs), recording in the audit
// log what they wrote while it was down.

// procMeta is what the daemon keeps with a background process's job.
type procMeta struct {
	Kind    string `json:"kind"` // "proc"
	Tag     string `json:"tag"`
	ExecID  string `json:"exec_id"`
	Command string `json:"command"`
	Actor   string `json:"actor"`
}

const metaProc = "proc"

// spawnBackground starts rreq as a job of jr; p is filled in but not yet
// in the sandbox's table. ErrUnsupported: the sandbox's agent has no jobs.
func (s *Service) spawnBackground(ctx context.Context, jr runtime.JobRunner, p *bgProc, rec *execRecord, rreq runtime.ExecRequest) error {
	meta, err := json.Marshal(procMeta{Kind: metaProc, Tag: p.tag, ExecID: p.execID, Command: p.command, Actor: rec.r.actor})
	if err != nil {
		return err
	}
	rreq.Stdin, rreq.Stdout, rreq.Stderr = nil, nil, nil
	info, err := jr.Spawn(ctx, rreq, runtime.JobOptions{Buffer: ProcOutputCap, Meta: meta})
	if err != nil {
		return err
	}
	p.pid, p.jobs = info.Pid, jr
	return nil
}

// follow copies a job's output, from offset 0, into p's buffer and, past
// offset audited, into the audit log, until the job ends (its exit is
// recorded, and the agent may forget it), the sandbox is gone, or the
// service closes (the job goes on, for the next daemon to follow).
func (s *Service) follow(id string, p *bgProc, rec *execRecord, audited int64) {
	defer s.followers.Done()
	defer close(p.exited)
	ctx := p.followCtx(s.life)
	out := func(o runtime.JobOutput) error {
		if o.Dropped > 0 {
			p.out.Skip(o.Offset)
			return nil
		}
		p.out.Write(o.Stream, o.Data)
		end := o.Offset + int64(len(o.Data))
		if end > audited {
			w := rec.out
			if o.Stream == "stderr" {
				w = rec.err
			}
			w.writeTo(o.Data[max(0, audited-o.Offset):], end)
		}
		return nil
	}
	st, err := s.followJob(ctx, p.jobs, p.pid, func() int64 { from, _, _ := p.out.Status(); return from }, runtime.AttachFollow, out)
	switch {
	case err == nil:
		res := execResult(st)
		rec.exited(res, nil)
		p.out.Finish(ended{res, nil, s.now()})
		// Recorded: the agent need not keep it for a later daemon.
		p.jobs.Forget(s.life, p.pid)
	case errors.Is(err, errStopped) && s.life.Err() == nil:
		// Its sandbox is gone (dropWorkload said so to its readers).
		rec.exited(ExecResult{}, errSandboxGone)
	case errors.Is(err, errStopped):
		// The service is closing: what was written so far is recorded;
		// the job goes on.
		rec.out.flush()
		rec.err.flush()
	default:
		err = fmt.Errorf("%w: process lost: %v", ErrUnavailable, err)
		rec.exited(ExecResult{}, err)
		p.out.Finish(ended{ExecResult{}, err, s.now()})
	}
}

// errStopped is why followJob returns when its context ends: the service
// closes (the job goes on, for the next daemon), or the sandbox is gone.
var errStopped = errors.New("stopped following")

// followJob attaches to job pid as mode says, from next() on, again after
// each broken attach, until the job ends (its status), it is gone or
// attaches keep failing (why), or ctx ends (errStopped).
func (s *Service) followJob(ctx context.Context, jr runtime.JobRunner, pid int, next func() int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.ExitStatus, error) {
	backoff := 50 * time.Millisecond
	for failures := 0; ; {
		end, err := jr.Attach(ctx, pid, next(), mode, out)
		switch {
		case err == nil && end.Exit != nil:
			return *end.Exit, nil
		case ctx.Err() != nil:
			return runtime.ExitStatus{}, errStopped
		case errors.Is(err, runtime.ErrNotFound), failures >= 20:
			return runtime.ExitStatus{}, err
		}
		if err != nil {
			failures++
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// followCtx is the context a follower of p runs under: the service's life,
// ended early by stopFollowing when the sandbox is gone.
func (p *bgProc) followCtx(life context.Context) context.Context {
	ctx, cancel := context.WithCancel(life)
	p.mu.Lock()
	p.stop = cancel
	p.mu.Unlock()
	return ctx
}

// stopFollowing ends p's follower, if it has one.
func (p *bgProc) stopFollowing() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		p.stop()
	}
}

// adoptJobs follows again the background processes a sandbox's agent kept
// while no daemon was connected. Called while reconciling at start.
func (s *Service) adoptJobs(ctx context.Context, rec store.Sandbox, sb runtime.Sandbox) {
	jr, ok := sb.(runtime.JobRunner)
	if !ok {
		return
	}
	jobs, err := jr.Jobs(ctx)
	if err != nil {
		if !errors.Is(err, runtime.ErrUnsupported) {
			s.log.Warn("reconcile: list the sandbox's processes", "sandbox", rec.ID, "err", err)
		}
		return
	}
	var audited map[string]int64
	t := s.workload(rec.ID, true)
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
				s.adoptSession(ctx, rec, sb, jr, t, j, m)
			}
			continue
		}
		var m procMeta
		if json.Unmarshal(j.Meta, &m) != nil || (m.Kind != metaProc && m.Kind != metaExec) {
			continue
		}
		if audited == nil {
			audited = s.auditedOutput(ctx, rec.ID, audit.ExecOutput, "exec_id")
		}
		r := auditor{a: s.audit, sandbox: rec.ID, tenant: rec.TenantID, actor: m.Actor}
		er := s.resumeExecRecord(r, rec.ID, m.ExecID)
		if m.Kind == metaExec {
			s.adoptExec(rec.ID, jr, t, j, m, er, audited[m.ExecID])
			continue
		}
		if len(t.procs) >= MaxBackground {
			continue
		}
		p := &bgProc{pid: j.Pid, tag: m.Tag, execID: m.ExecID, command: m.Command, started: j.Started,
			out: newOutBuf(ProcOutputCap), exited: make(chan struct{}), jobs: jr}
		t.procs = append(t.procs, p)
		s.followers.Add(1)
		go s.follow(rec.ID, p, er, audited[m.ExecID])
	}
}

// auditedOutput is, per command or session (the value of field key in
// events of type typ) of sandbox id, the offset in its output after what
// its log holds (the "end" of its newest piece).
func (s *Service) auditedOutput(ctx context.Context, id, typ, key string) map[string]int64 {
	out := map[string]int64{}
	events, err := s.st.AuditEvents(ctx, id, store.AuditFilter{Types: []string{typ}})
	if err != nil {
		s.log.Warn("reconcile: read the recorded output", "sandbox", id, "err", err)
		return out
	}
	for _, e := range events {
		var d map[string]any
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		k, _ := d[key].(string)
		if end, ok := d["end"].(float64); ok && int64(end) > out[k] {
			out[k] = int64(end)
		}
	}
	return out
}

// resumeExecRecord is the recorder of a command whose start an earlier
// daemon recorded.
func (s *Service) resumeExecRecord(r auditor, id, execID string) *execRecord {
	sc := s.scrubber(id)
	return &execRecord{r: r, id: execID,
		out: r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": execID, "stream": "stdout"}),
		err: r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": execID, "stream": "stderr"}),
	}
}

// jobInput writes r to a job's stdin, closing it after with closeStdin.
func (s *Service) jobInput(ctx context.Context, p *bgProc, r io.Reader, closeStdin bool) (int64, error) {
	cr := &countingReader{r: r}
	err := p.jobs.Input(ctx, p.pid, cr, closeStdin)
	// Its stdin closed, or the job ended and was forgotten since: closing
	// is done (as closing a pipe twice is), writing is refused.
	if errors.Is(err, runtime.ErrInvalid) || errors.Is(err, runtime.ErrNotFound) {
		if closeStdin {
			return cr.n, nil
		}
		return cr.n, fmt.Errorf("%w: process %d's stdin is closed (%v)", ErrConflict, p.pid, err)
	}
	if err != nil {
		return cr.n, fmt.Errorf("%w: stdin of %d: %v", ErrUnavailable, p.pid, err)
	}
	return cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// eof is an empty input.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
