package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

// A background process runs as a job of the sandbox's agent when its
// runtime has them: the agent keeps it running and keeps its output while
// no daemon is connected, so a restart, a crash or an upgrade of the
// daemon loses neither. The daemon follows each job (follow): its output
// goes into the process's buffer, which readers are served from, and into
// the audit log; at start, a daemon lists the jobs of every sandbox it
// re-attaches and follows them again (Adopt), recording in the audit log
// what they wrote while it was down.

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
func spawnBackground(ctx context.Context, jr runtime.JobRunner, p *Proc, rec CommandRecorder, rreq runtime.ExecRequest) error {
	meta, err := json.Marshal(procMeta{Kind: metaProc, Tag: p.tag, ExecID: p.execID, Command: p.command, Actor: rec.Actor()})
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
func (w *Work) follow(ctx context.Context, p *Proc, rec CommandRecorder, audited int64) {
	out := func(o runtime.JobOutput) error {
		if o.Dropped > 0 {
			p.out.Skip(o.Offset)
			return nil
		}
		p.out.Write(o.Stream, o.Data)
		end := o.Offset + int64(len(o.Data))
		if end > audited {
			recordOutput(rec, o.Stream, o.Data[max(0, audited-o.Offset):], end)
		}
		return nil
	}
	st, err := followJob(ctx, p.jobs, p.pid, func() int64 { from, _, _ := p.out.Status(); return from }, runtime.AttachFollow, out)
	switch {
	case err == nil:
		res := ExitResult(st)
		rec.Exited(res, nil)
		p.out.Finish(ended{res, nil, w.host.Now()})
		// Recorded: the agent need not keep it for a later daemon.
		p.jobs.Forget(w.life, p.pid)
	case errors.Is(err, errStopped) && w.life.Err() == nil:
		// Its sandbox is gone (Drop said so to its readers).
		rec.Exited(ExecResult{}, errSandboxGone)
	case errors.Is(err, errStopped):
		// The service is closing: what was written so far is recorded;
		// the job goes on.
		rec.Stdout().Flush()
		rec.Stderr().Flush()
	default:
		err = fmt.Errorf("%w: process lost: %v", errdefs.ErrUnavailable, err)
		rec.Exited(ExecResult{}, err)
		p.out.Finish(ended{ExecResult{}, err, w.host.Now()})
	}
}

// recordOutput records p, a piece of stream that ends at offset end of
// the command's output.
func recordOutput(rec CommandRecorder, stream string, p []byte, end int64) {
	o := rec.Stdout()
	if stream == "stderr" {
		o = rec.Stderr()
	}
	o.WriteEnd(p, end)
}

// jobInput writes r to a job's stdin, closing it after with closeStdin.
func (p *Proc) jobInput(ctx context.Context, r io.Reader, closeStdin bool) (int64, error) {
	cr := &countingReader{r: r}
	err := p.jobs.Input(ctx, p.pid, cr, closeStdin)
	// Its stdin closed, or the job ended and was forgotten since: closing
	// is done (as closing a pipe twice is), writing is refused.
	if errors.Is(err, runtime.ErrInvalid) || errors.Is(err, runtime.ErrNotFound) {
		if closeStdin {
			return cr.n, nil
		}
		return cr.n, fmt.Errorf("%w: process %d's stdin is closed (%v)", errdefs.ErrConflict, p.pid, err)
	}
	if err != nil {
		return cr.n, fmt.Errorf("%w: stdin of %d: %v", errdefs.ErrUnavailable, p.pid, err)
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
