package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

// A command whose output a client waits for (exec, JSON or streamed) runs
// as a job of the sandbox's agent where it speaks protocol 4: its output
// reaches the client through a holding attach, so a slow client slows the
// command rather than lose its output, as on the agent connection of old;
// and when the daemon goes away mid-command, the command goes on. Its
// client, cut off, re-attaches by exec id (GET .../execs/{exec_id} and
// .../output) under the next daemon, which adopts the job as it does a
// background process's. A client that goes away while the daemon stays
// still ends the command, as before.

const metaExec = "exec"

// ExecJobBuffer is the output the agent keeps of a command streamed to a
// client, for that client to re-attach to after a restart of the daemon.
const ExecJobBuffer = 16 << 20

// maxEndedExecs bounds the ended commands a sandbox keeps for GET
// .../execs/{exec_id} (older ones are answered from the audit log).
const maxEndedExecs = 16

// Stream receives a streaming exec's events, in order, from one goroutine.
type Stream interface {
	// Started comes first: the process's pid, and the exec id a client
	// cut off by a restart of the server re-attaches with.
	Started(pid int, execID string) error
	Stdout(p []byte) error
	Stderr(p []byte) error
}

// ExecJob runs rreq, described by command, as a job of jr (sandbox id's
// runtime side sb) and streams its output to out until it ends.
// ErrUnsupported: the agent is too old for it.
func (w *Work) ExecJob(ctx context.Context, id string, sb runtime.Sandbox, jr runtime.JobRunner, command string, rreq runtime.ExecRequest, rec CommandRecorder, out Stream) (ExecResult, error) {
	meta, err := json.Marshal(procMeta{Kind: metaExec, ExecID: rec.ID(), Command: command, Actor: rec.Actor()})
	if err != nil {
		return ExecResult{}, err
	}
	stdin := rreq.Stdin
	rreq.Stdin, rreq.Stdout, rreq.Stderr = nil, nil, nil
	info, err := jr.Spawn(ctx, rreq, runtime.JobOptions{Buffer: ExecJobBuffer, Meta: meta, CloseStdin: stdin == nil})
	if errors.Is(err, runtime.ErrUnsupported) {
		return ExecResult{}, err
	}
	if err != nil {
		err = w.host.ExecError(ctx, id, err)
		rec.Exited(ExecResult{}, err)
		return ExecResult{}, err
	}
	p := &Proc{pid: info.Pid, execID: rec.ID(), command: command, started: w.host.Now(),
		out: newOutBuf(ProcOutputCap), jobs: jr}
	t := w.workload(id, true)
	t.mu.Lock()
	t.addExec(p)
	t.mu.Unlock()
	if stdin != nil {
		go jr.Input(context.WithoutCancel(ctx), info.Pid, stdin, true)
	}
	// The request's end (the client gone) or the service's (a restart)
	// ends the attach; only the first ends the command.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.life, cancel)()
	p.set(cancel, nil) // the sandbox's end ends the attach at once
	var sendErr error
	if sendErr = out.Started(info.Pid, rec.ID()); sendErr != nil {
		cancel()
	}
	var next int64
	copyOut := func(send bool) func(runtime.JobOutput) error {
		return func(o runtime.JobOutput) error {
			if o.Dropped > 0 {
				p.out.Skip(o.Offset)
				next = o.Offset
				return nil
			}
			p.out.Write(o.Stream, o.Data)
			next = o.Offset + int64(len(o.Data))
			recordOutput(rec, o.Stream, o.Data, next)
			if !send {
				return nil
			}
			to := out.Stdout
			if o.Stream == "stderr" {
				to = out.Stderr
			}
			if err := to(o.Data); err != nil {
				sendErr = err
				return err
			}
			return nil
		}
	}
	st, err := followJob(actx, jr, info.Pid, func() int64 { return next }, runtime.AttachHold, copyOut(true))
	if errors.Is(err, runtime.ErrUnsupported) {
		// Spawn needs protocol 4 as the hold does: not reached.
		err = fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	switch {
	case err == nil:
	case w.life.Err() != nil:
		// The daemon is going; the command is not. What it printed so far
		// is recorded, and the next daemon records the rest.
		rec.Stdout().Flush()
		rec.Stderr().Flush()
		return ExecResult{}, fmt.Errorf("%w; exec %s goes on: GET /v1/sandboxes/%s/execs/%s follows it", ErrServerStopping, rec.ID(), id, rec.ID())
	case sendErr == nil && ctx.Err() == nil:
		// Not the client's doing: the sandbox went (a delete waits here
		// until it is recorded), or the job was lost.
		gone := w.host.Stopped(ctx, id)
		if gone == nil {
			gone = w.host.ExecError(ctx, id, err)
		}
		rec.Exited(ExecResult{}, gone)
		p.out.Finish(ended{ExecResult{}, gone, w.host.Now()})
		return ExecResult{}, gone
	default:
		// The client went away: end the command, and record its end.
		why := sendErr
		if why == nil {
			why = context.Cause(ctx)
		}
		kctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		sb.Signal(kctx, info.Pid, int(syscall.SIGKILL))
		done()
		st, err = followJob(w.life, jr, info.Pid, func() int64 { return next }, runtime.AttachFollow, copyOut(false))
		res := ExitResult(st)
		if err != nil {
			res = ExecResult{}
		}
		err = fmt.Errorf("exec stream: %w", why)
		rec.Exited(res, err)
		p.out.Finish(ended{res, err, w.host.Now()})
		jr.Forget(context.WithoutCancel(ctx), info.Pid)
		return ExecResult{}, err
	}
	res := ExitResult(st)
	rec.Exited(res, nil)
	p.out.Finish(ended{res, nil, w.host.Now()})
	// Its client has it all: the agent need not keep it.
	jr.Forget(context.WithoutCancel(ctx), info.Pid)
	if sendErr != nil {
		return res, fmt.Errorf("exec stream: %w", sendErr)
	}
	return res, nil
}

// addExec keeps a command streamed to a client, forgetting the oldest
// ended ones past maxEndedExecs. t.mu is held.
func (t *workload) addExec(p *Proc) {
	ended := 0
	for i := len(t.execs) - 1; i >= 0; i-- {
		if _, done, _ := t.execs[i].out.Status(); done {
			if ended++; ended >= maxEndedExecs {
				t.execs = slices.Delete(t.execs, i, i+1)
			}
		}
	}
	t.execs = append(t.execs, p)
}

// adoptExec follows again a command an earlier daemon streamed to a client
// when it went away. t.mu is held.
func (w *Work) adoptExec(jr runtime.JobRunner, t *workload, j runtime.JobInfo, m procMeta, rec CommandRecorder, audited int64) {
	p := &Proc{pid: j.Pid, execID: m.ExecID, command: m.Command, started: j.Started,
		out: newOutBuf(ProcOutputCap), jobs: jr}
	t.addExec(p)
	w.goFollowProc(p, rec, audited)
}

// ByExecID finds sandbox id's command with exec id execID: one streamed
// to a client or a background process.
func (w *Work) ByExecID(id, execID string) (*Proc, error) {
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, list := range [][]*Proc{t.execs, t.procs} {
			for _, p := range list {
				if p.execID == execID {
					return p, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("%w: no command %s kept in sandbox %s", errdefs.ErrNotFound, execID, id)
}
