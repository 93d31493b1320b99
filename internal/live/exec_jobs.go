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
	// The request's end (the client gone) or the service's (a restart)
	// ends the attach; only the first ends the command.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.life, cancel)()
	x := &execJob{w: w, id: id, jr: jr, command: command, rec: rec, out: out, cancel: cancel}
	// Spawn, attach and, once it ends, forget, in one call where the
	// runtime is a node's: the common case pays one round trip.
	end, err := runtime.RunJob(actx, jr, rreq, runtime.JobOptions{Buffer: ExecJobBuffer, Meta: meta}, x.started, x.copyOut(true))
	if x.p == nil {
		if errors.Is(err, runtime.ErrUnsupported) {
			return ExecResult{}, err
		}
		err = w.host.ExecError(ctx, id, err)
		rec.Exited(ExecResult{}, err)
		return ExecResult{}, err
	}
	if err == nil && end.Exit != nil {
		res := ExitResult(*end.Exit)
		rec.Exited(res, nil)
		x.p.out.Finish(ended{res, nil, w.host.Now()})
		return res, nil
	}
	// Cut off before the end (the node's connection broke, the client
	// or the service went): followed on as any attach that broke.
	return x.followOn(ctx, actx, sb)
}

// execJob is a command's run as a job, for the client waiting for it.
type execJob struct {
	w       *Work
	id      string
	jr      runtime.JobRunner
	command string
	rec     CommandRecorder
	out     Stream
	cancel  context.CancelFunc // ends the attach
	p       *Proc              // once started
	sendErr error              // the client's, sending it output
	next    int64              // the offset after the output received
}

// started keeps the job as the sandbox's command and tells the client.
func (x *execJob) started(info runtime.JobInfo) error {
	x.p = &Proc{pid: info.Pid, execID: x.rec.ID(), command: x.command, started: x.w.host.Now(),
		out: newOutBuf(ProcOutputCap), jobs: x.jr}
	t := x.w.workload(x.id, true)
	t.mu.Lock()
	t.addExec(x.p)
	t.mu.Unlock()
	x.p.set(x.cancel, nil) // the sandbox's end ends the attach at once
	if x.sendErr = x.out.Started(info.Pid, x.rec.ID()); x.sendErr != nil {
		x.cancel()
		return x.sendErr
	}
	return nil
}

// copyOut keeps and records the job's output and, with send, sends it
// to the client.
func (x *execJob) copyOut(send bool) func(runtime.JobOutput) error {
	return func(o runtime.JobOutput) error {
		if o.Dropped > 0 {
			x.p.out.Skip(o.Offset)
			x.next = o.Offset
			return nil
		}
		x.p.out.Write(o.Stream, o.Data)
		x.next = o.Offset + int64(len(o.Data))
		recordOutput(x.rec, o.Stream, o.Data, x.next)
		if !send {
			return nil
		}
		to := x.out.Stdout
		if o.Stream == "stderr" {
			to = x.out.Stderr
		}
		if err := to(o.Data); err != nil {
			// The client is gone: no attach again, end the command.
			x.sendErr = err
			x.cancel()
			return err
		}
		return nil
	}
}

func (x *execJob) offset() int64 { return x.next }

// followOn follows the job on, with actx, after its run was cut off, to
// its end or the end of its client (the command is killed) or of the
// service (it goes on).
func (x *execJob) followOn(ctx, actx context.Context, sb runtime.Sandbox) (ExecResult, error) {
	w, rec, p := x.w, x.rec, x.p
	st, err := followJob(actx, x.jr, p.pid, x.offset, runtime.AttachHold, x.copyOut(true))
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
		return ExecResult{}, fmt.Errorf("%w; exec %s goes on: GET /v1/sandboxes/%s/execs/%s follows it", ErrServerStopping, rec.ID(), x.id, rec.ID())
	case x.sendErr == nil && ctx.Err() == nil:
		// Not the client's doing: the sandbox went (a delete waits here
		// until it is recorded), or the job was lost.
		gone := w.host.Stopped(ctx, x.id)
		if gone == nil {
			gone = w.host.ExecError(ctx, x.id, err)
		}
		rec.Exited(ExecResult{}, gone)
		p.out.Finish(ended{ExecResult{}, gone, w.host.Now()})
		return ExecResult{}, gone
	default:
		return x.kill(ctx, sb)
	}
	res := ExitResult(st)
	rec.Exited(res, nil)
	p.out.Finish(ended{res, nil, w.host.Now()})
	// Its client has it all: the agent need not keep it.
	x.jr.Forget(context.WithoutCancel(ctx), p.pid)
	if x.sendErr != nil {
		return res, fmt.Errorf("exec stream: %w", x.sendErr)
	}
	return res, nil
}

// kill ends the command of a client that went away, and records its end.
func (x *execJob) kill(ctx context.Context, sb runtime.Sandbox) (ExecResult, error) {
	w, p := x.w, x.p
	why := x.sendErr
	if why == nil {
		why = context.Cause(ctx)
	}
	kctx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	sb.Signal(kctx, p.pid, int(syscall.SIGKILL))
	done()
	st, err := followJob(w.life, x.jr, p.pid, x.offset, runtime.AttachFollow, x.copyOut(false))
	res := ExitResult(st)
	if err != nil {
		res = ExecResult{}
	}
	err = fmt.Errorf("exec stream: %w", why)
	x.rec.Exited(res, err)
	p.out.Finish(ended{res, err, w.host.Now()})
	x.jr.Forget(context.WithoutCancel(ctx), p.pid)
	return ExecResult{}, err
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
