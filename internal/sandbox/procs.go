package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// MaxBackground bounds the background processes kept per sandbox, running
// or exited (the oldest exited ones are forgotten first).
const MaxBackground = 64

// ProcInfo describes a background process.
type ProcInfo struct {
	Pid       int         `json:"pid"`
	Tag       string      `json:"tag"`
	ExecID    string      `json:"exec_id"` // in the audit log
	Command   string      `json:"command"`
	State     string      `json:"state"` // "running", "exited" or "lost"
	StartedAt time.Time   `json:"started_at"`
	EndedAt   time.Time   `json:"ended_at,omitzero"`
	Exit      *ExecResult `json:"exit,omitempty"`
	Output    int64       `json:"output_bytes"` // the offset after the newest output
}

// bgProc is a background process: it outlives the request that started it,
// and its output is kept (bounded) for any number of readers.
type bgProc struct {
	pid     int
	tag     string
	execID  string
	command string
	started time.Time
	stdin   *io.PipeWriter    // nil for a job
	jobs    runtime.JobRunner // set when it runs as a job (procs_jobs.go)
	out     *outBuf
	exited  chan struct{} // closed once its end is recorded

	mu   sync.Mutex
	stop context.CancelFunc // ends its follower (procs_jobs.go)
}

var errSandboxGone = fmt.Errorf("%w: the sandbox was destroyed", ErrConflict)

// startBackground starts req and returns at once; the process runs until it
// ends, its timeout, or its sandbox's end, whoever asked for it.
func (s *Service) startBackground(ctx context.Context, c Caller, id string, req ExecRequest) (ProcInfo, error) {
	if req.Stdin != "" {
		return ProcInfo{}, fmt.Errorf("%w: a background process takes stdin through its stdin route, not the request", ErrInvalid)
	}
	sb, rreq, err := s.prepareExec(ctx, c, id, req)
	if err != nil {
		return ProcInfo{}, err
	}
	t := s.workload(id, true)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.makeRoom(); err != nil {
		return ProcInfo{}, err
	}
	tag := req.Tag
	if tag == "" {
		var b [6]byte
		rand.Read(b[:])
		tag = "proc-" + hex.EncodeToString(b[:])
	}
	req.Cwd = rreq.Cwd
	rec := s.recordExec(c, id, req, true, "")
	p := &bgProc{tag: tag, execID: rec.id, command: describe(req), started: s.now(), out: newOutBuf(ProcOutputCap), exited: make(chan struct{})}
	if jr, ok := sb.(runtime.JobRunner); ok {
		// Not the request's context: the process outlives the request.
		err := s.spawnBackground(context.WithoutCancel(ctx), jr, p, rec, rreq)
		if err == nil {
			t.procs = append(t.procs, p)
			s.followers.Add(1)
			go s.follow(id, p, rec, 0)
			return p.info(), nil
		}
		if !errors.Is(err, runtime.ErrUnsupported) {
			err = s.execError(ctx, id, err)
			rec.exited(ExecResult{}, err)
			return ProcInfo{}, err
		}
		// An agent without jobs (started by an older binary): the
		// process runs on this daemon's connection.
	}
	pr, pw := io.Pipe()
	p.stdin = pw
	rreq.Stdin = pr
	rreq.Stdout, rreq.Stderr = rec.stdout(p.out.Writer("stdout")), rec.stderr(p.out.Writer("stderr"))
	// Not the request's context: the process outlives the request.
	proc, err := sb.Start(context.WithoutCancel(ctx), rreq)
	if err != nil {
		pw.Close()
		err = s.execError(ctx, id, err)
		rec.exited(ExecResult{}, err)
		return ProcInfo{}, err
	}
	p.pid = proc.Pid()
	t.procs = append(t.procs, p)
	go func() {
		defer close(p.exited)
		st, err := proc.Wait()
		pr.Close()
		if err != nil {
			err = fmt.Errorf("%w: process lost: %v", ErrUnavailable, err)
			rec.exited(ExecResult{}, err)
			p.out.Finish(ended{ExecResult{}, err, s.now()})
			return
		}
		rec.exited(execResult(st), nil)
		p.out.Finish(ended{execResult(st), nil, s.now()})
	}()
	return p.info(), nil
}

// makeRoom forgets the oldest exited process when the table is full, or
// refuses a new one when all are running. t.mu is held.
func (t *workload) makeRoom() error {
	if len(t.procs) < MaxBackground {
		return nil
	}
	for i, p := range t.procs {
		if p.info().State != "running" {
			t.procs = slices.Delete(t.procs, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("%w: %d background processes are running in this sandbox", ErrLimitExceeded, MaxBackground)
}

func (p *bgProc) info() ProcInfo {
	end, done, how := p.out.Status()
	in := ProcInfo{Pid: p.pid, Tag: p.tag, ExecID: p.execID, Command: p.command, State: "running", StartedAt: p.started, Output: end}
	switch {
	case done && how.err != nil:
		in.State, in.EndedAt = "lost", how.at
	case done:
		in.State, in.EndedAt, in.Exit = "exited", how.at, &how.exit
	}
	return in
}

func describe(req ExecRequest) string {
	if req.Command != "" {
		return req.Command
	}
	return strings.Join(req.Cmd, " ")
}

// ListProcesses returns a sandbox's background processes, oldest first.
func (s *Service) ListProcesses(ctx context.Context, c Caller, id string) ([]ProcInfo, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	out := []ProcInfo{}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, p := range t.procs {
			out = append(out, p.info())
		}
	}
	return out, nil
}

// proc finds a caller's background process.
func (s *Service) proc(ctx context.Context, c Caller, id string, pid int) (*bgProc, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, p := range t.procs {
			if p.pid == pid {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no background process %d in sandbox %s", ErrNotFound, pid, id)
}

// WriteStdin copies r to a background process's stdin.
func (s *Service) WriteStdin(ctx context.Context, c Caller, id string, pid int, r io.Reader) (int64, error) {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return 0, err
	}
	if p.jobs != nil {
		return s.jobInput(ctx, p, r, false)
	}
	n, err := io.Copy(p.stdin, r)
	if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, errSandboxGone) {
		return n, fmt.Errorf("%w: process %d's stdin is closed", ErrConflict, pid)
	}
	return n, err
}

// CloseStdin ends a background process's stdin (it reads EOF).
func (s *Service) CloseStdin(ctx context.Context, c Caller, id string, pid int) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	if p.jobs != nil {
		_, err := s.jobInput(ctx, p, eof{}, true)
		return err
	}
	return p.stdin.Close()
}

// SignalProcess sends sig to a background process.
func (s *Service) SignalProcess(ctx context.Context, c Caller, id string, pid, sig int) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	if p.info().State != "running" {
		return fmt.Errorf("%w: process %d has ended", ErrConflict, pid)
	}
	_, sb, err := s.live(ctx, c, id)
	if err != nil {
		return err
	}
	if err := sb.Signal(ctx, p.pid, sig); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("%w: process %d has ended", ErrConflict, pid)
		}
		return fmt.Errorf("%w: signal %d: %v", ErrUnavailable, pid, err)
	}
	return nil
}
