package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

// StartTag tags a template's start command (a service the sandbox runs
// for its whole life): it does not keep the sandbox from counting as
// idle, as other background processes do.
const StartTag = "template-start"

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

// Proc is a background process, or a command streamed to a client: it
// outlives the request that started it, and its output is kept (bounded)
// for any number of readers.
type Proc struct {
	pid     int
	tag     string
	execID  string
	command string
	started time.Time
	stdin   *io.PipeWriter    // nil for a job
	jobs    runtime.JobRunner // set when it runs as a job (procs_jobs.go)
	out     *outBuf

	following // its follower (follow.go)
}

var errSandboxGone = fmt.Errorf("%w: the sandbox was destroyed", errdefs.ErrConflict)

// StartBackground starts rreq in sandbox id and returns at once; the
// process runs until it ends, its timeout, or its sandbox's end, whoever
// asked for it. tag names it ("": one is drawn), command describes it, and
// record records its start, once there is room for it, and returns the
// recorder of the rest.
func (w *Work) StartBackground(ctx context.Context, id string, sb runtime.Sandbox, rreq runtime.ExecRequest, tag, command string, record func() CommandRecorder) (ProcInfo, error) {
	t := w.workload(id, true)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.makeRoom(); err != nil {
		return ProcInfo{}, err
	}
	if tag == "" {
		var b [6]byte
		rand.Read(b[:])
		tag = "proc-" + hex.EncodeToString(b[:])
	}
	rec := record()
	p := &Proc{tag: tag, execID: rec.ID(), command: command, started: w.host.Now(), out: newOutBuf(ProcOutputCap)}
	if jr, ok := sb.(runtime.JobRunner); ok {
		// Not the request's context: the process outlives the request.
		err := spawnBackground(context.WithoutCancel(ctx), jr, p, rec, rreq)
		if err == nil {
			t.procs = append(t.procs, p)
			w.goFollowProc(p, rec, 0)
			return p.Info(), nil
		}
		if !errors.Is(err, runtime.ErrUnsupported) {
			err = w.host.ExecError(ctx, id, err)
			rec.Exited(ExecResult{}, err)
			return ProcInfo{}, err
		}
		// An agent without jobs (started by an older binary): the
		// process runs on this daemon's connection.
	}
	pr, pw := io.Pipe()
	p.stdin = pw
	rreq.Stdin = pr
	rreq.Stdout = io.MultiWriter(rec.Stdout(), p.out.Writer("stdout"))
	rreq.Stderr = io.MultiWriter(rec.Stderr(), p.out.Writer("stderr"))
	// Not the request's context: the process outlives the request.
	proc, err := sb.Start(context.WithoutCancel(ctx), rreq)
	if err != nil {
		pw.Close()
		err = w.host.ExecError(ctx, id, err)
		rec.Exited(ExecResult{}, err)
		return ProcInfo{}, err
	}
	p.pid = proc.Pid()
	t.procs = append(t.procs, p)
	go func() {
		st, err := proc.Wait()
		pr.Close()
		if err != nil {
			err = fmt.Errorf("%w: process lost: %v", errdefs.ErrUnavailable, err)
			rec.Exited(ExecResult{}, err)
			p.out.Finish(ended{ExecResult{}, err, w.host.Now()})
			return
		}
		rec.Exited(ExitResult(st), nil)
		p.out.Finish(ended{ExitResult(st), nil, w.host.Now()})
	}()
	return p.Info(), nil
}

// makeRoom forgets the oldest exited process when the table is full, or
// refuses a new one when all are running. t.mu is held.
func (t *workload) makeRoom() error {
	if len(t.procs) < MaxBackground {
		return nil
	}
	for i, p := range t.procs {
		if p.Info().State != "running" {
			t.procs = slices.Delete(t.procs, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("%w: %d background processes are running in this sandbox", errdefs.ErrLimitExceeded, MaxBackground)
}

// Info describes the process as it is now.
func (p *Proc) Info() ProcInfo {
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

// Procs returns sandbox id's background processes, oldest first.
func (w *Work) Procs(id string) []ProcInfo {
	out := []ProcInfo{}
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, p := range t.procs {
			out = append(out, p.Info())
		}
	}
	return out
}

// Proc finds background process pid of sandbox id.
func (w *Work) Proc(id string, pid int) (*Proc, error) {
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, p := range t.procs {
			if p.pid == pid {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no background process %d in sandbox %s", errdefs.ErrNotFound, pid, id)
}

// WriteStdin copies r to the process's stdin.
func (p *Proc) WriteStdin(ctx context.Context, r io.Reader) (int64, error) {
	if p.jobs != nil {
		return p.jobInput(ctx, r, false)
	}
	n, err := io.Copy(p.stdin, r)
	if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, errSandboxGone) {
		return n, fmt.Errorf("%w: process %d's stdin is closed", errdefs.ErrConflict, p.pid)
	}
	return n, err
}

// CloseStdin ends the process's stdin (it reads EOF).
func (p *Proc) CloseStdin(ctx context.Context) error {
	if p.jobs != nil {
		_, err := p.jobInput(ctx, eof{}, true)
		return err
	}
	return p.stdin.Close()
}

// Signal sends sig to the process, which runs in sb.
func (p *Proc) Signal(ctx context.Context, sb runtime.Sandbox, sig int) error {
	if err := sb.Signal(ctx, p.pid, sig); err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("%w: process %d has ended", errdefs.ErrConflict, p.pid)
		}
		return fmt.Errorf("%w: signal %d: %v", errdefs.ErrUnavailable, p.pid, err)
	}
	return nil
}
