package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/store"
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

// errClientGone is why a command ends whose client went away.
var errClientGone = errors.New("the client went away")

// execJob runs rreq as a job of jr and streams its output to out until it
// ends. ErrUnsupported: the agent is too old for it.
func (s *Service) execJob(ctx context.Context, id string, sb runtime.Sandbox, jr runtime.JobRunner, req ExecRequest, rreq runtime.ExecRequest, rec *execRecord, out Stream) (ExecResult, error) {
	meta, err := json.Marshal(procMeta{Kind: metaExec, ExecID: rec.id, Command: describe(req), Actor: rec.r.actor})
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
		err = s.execError(ctx, id, err)
		rec.exited(ExecResult{}, err)
		return ExecResult{}, err
	}
	p := &bgProc{pid: info.Pid, execID: rec.id, command: describe(req), started: s.now(),
		out: newOutBuf(ProcOutputCap), exited: make(chan struct{}), jobs: jr}
	defer close(p.exited)
	t := s.workload(id, true)
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
	defer context.AfterFunc(s.life, cancel)()
	p.mu.Lock()
	p.stop = cancel // the sandbox's end ends the attach at once
	p.mu.Unlock()
	var sendErr error
	if sendErr = out.Started(info.Pid, rec.id); sendErr != nil {
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
			w, to := rec.out, out.Stdout
			if o.Stream == "stderr" {
				w, to = rec.err, out.Stderr
			}
			w.writeTo(o.Data, next)
			if !send {
				return nil
			}
			if err := to(o.Data); err != nil {
				sendErr = err
				return err
			}
			return nil
		}
	}
	st, err := s.followJob(actx, jr, info.Pid, func() int64 { return next }, runtime.AttachHold, copyOut(true))
	if errors.Is(err, runtime.ErrUnsupported) {
		// Spawn needs protocol 4 as the hold does: not reached.
		err = fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	switch {
	case err == nil:
	case s.life.Err() != nil:
		// The daemon is going; the command is not. What it printed so far
		// is recorded, and the next daemon records the rest.
		rec.out.flush()
		rec.err.flush()
		return ExecResult{}, fmt.Errorf("%w; exec %s goes on: GET /v1/sandboxes/%s/execs/%s follows it", ErrServerStopping, rec.id, id, rec.id)
	case sendErr == nil && ctx.Err() == nil:
		// Not the client's doing: the sandbox went (a delete waits here
		// until it is recorded), or the job was lost.
		gone := s.stoppedError(ctx, id)
		if gone == nil {
			gone = s.execError(ctx, id, err)
		}
		rec.exited(ExecResult{}, gone)
		p.out.Finish(ended{ExecResult{}, gone, s.now()})
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
		st, err = s.followJob(s.life, jr, info.Pid, func() int64 { return next }, runtime.AttachFollow, copyOut(false))
		res := execResult(st)
		if err != nil {
			res = ExecResult{}
		}
		err = fmt.Errorf("exec stream: %w", why)
		rec.exited(res, err)
		p.out.Finish(ended{res, err, s.now()})
		jr.Forget(context.WithoutCancel(ctx), info.Pid)
		return ExecResult{}, err
	}
	res := execResult(st)
	rec.exited(res, nil)
	p.out.Finish(ended{res, nil, s.now()})
	// Its client has it all: the agent need not keep it.
	jr.Forget(context.WithoutCancel(ctx), info.Pid)
	if sendErr != nil {
		return res, fmt.Errorf("exec stream: %w", sendErr)
	}
	return res, nil
}

// addExec keeps a command streamed to a client, forgetting the oldest
// ended ones past maxEndedExecs. t.mu is held.
func (t *workload) addExec(p *bgProc) {
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
func (s *Service) adoptExec(id string, jr runtime.JobRunner, t *workload, j runtime.JobInfo, m procMeta, er *execRecord, audited int64) {
	p := &bgProc{pid: j.Pid, execID: m.ExecID, command: m.Command, started: j.Started,
		out: newOutBuf(ProcOutputCap), exited: make(chan struct{}), jobs: jr}
	t.addExec(p)
	s.followers.Add(1)
	go s.follow(id, p, er, audited)
}

// execByID finds a caller's command by exec id: one streamed to a client
// or a background process.
func (s *Service) execByID(ctx context.Context, c Caller, id, execID string) (*bgProc, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, list := range [][]*bgProc{t.execs, t.procs} {
			for _, p := range list {
				if p.execID == execID {
					return p, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("%w: no command %s kept in sandbox %s", ErrNotFound, execID, id)
}

// ExecInfo describes a command by its exec id (GET .../execs/{exec_id}).
type ExecInfo struct {
	ExecID     string      `json:"exec_id"`
	Pid        int         `json:"pid,omitempty"`
	Command    string      `json:"command"`
	Background bool        `json:"background"`
	Session    string      `json:"session_id,omitempty"`
	State      string      `json:"state"` // "running", "exited" or "lost"
	StartedAt  time.Time   `json:"started_at"`
	EndedAt    time.Time   `json:"ended_at,omitzero"`
	Exit       *ExecResult `json:"exit,omitempty"`
	Output     int64       `json:"output_bytes"` // the offset after its newest output (0 when not kept)
	Kept       bool        `json:"output_kept"`  // its output can be read at .../output
}

// GetExec describes the command with exec id execID: from what the daemon
// keeps (a command streamed to a client, a background process), else from
// the audit log (any command the sandbox ran, session commands too).
func (s *Service) GetExec(ctx context.Context, c Caller, id, execID string) (ExecInfo, error) {
	p, err := s.execByID(ctx, c, id, execID)
	if err == nil {
		in := p.info()
		return ExecInfo{ExecID: execID, Pid: in.Pid, Command: in.Command, Background: in.Tag != "", State: in.State,
			StartedAt: in.StartedAt, EndedAt: in.EndedAt, Exit: in.Exit, Output: in.Output, Kept: true}, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return ExecInfo{}, err
	}
	return s.execFromAudit(ctx, id, execID)
}

// execFromAudit describes a command from its exec.started and exec.exited
// events.
func (s *Service) execFromAudit(ctx context.Context, id, execID string) (ExecInfo, error) {
	events, err := s.st.AuditEvents(ctx, id, store.AuditFilter{Types: []string{audit.ExecStarted, audit.ExecExited}})
	if err != nil {
		return ExecInfo{}, fmt.Errorf("read the audit log: %w", err)
	}
	var in ExecInfo
	for _, e := range events {
		var d struct {
			ExecID     string   `json:"exec_id"`
			Command    string   `json:"command"`
			Argv       []string `json:"argv"`
			Background bool     `json:"background"`
			Session    string   `json:"session_id"`
			ExitCode   int      `json:"exit_code"`
			Signal     int      `json:"signal"`
			TimedOut   bool     `json:"timed_out"`
			OOMKilled  bool     `json:"oom_killed"`
			DurationMS float64  `json:"duration_ms"`
			Error      string   `json:"error"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.ExecID != execID {
			continue
		}
		switch e.Type {
		case audit.ExecStarted:
			in = ExecInfo{ExecID: execID, Command: d.Command, Background: d.Background, Session: d.Session, StartedAt: e.Time, State: "lost"}
			if d.Command == "" {
				in.Command = strings.Join(d.Argv, " ")
			}
			if d.Session != "" {
				in.State = "running" // until its end is recorded
			}
		case audit.ExecExited:
			in.EndedAt = e.Time
			if d.Error != "" {
				in.State = "lost"
				continue
			}
			in.State = "exited"
			in.Exit = &ExecResult{ExitCode: d.ExitCode, Signal: d.Signal, TimedOut: d.TimedOut, OOMKilled: d.OOMKilled, DurationMS: d.DurationMS}
		}
	}
	if in.ExecID == "" {
		return ExecInfo{}, fmt.Errorf("%w: no command %s in sandbox %s", ErrNotFound, execID, id)
	}
	return in, nil
}
