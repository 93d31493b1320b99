package live

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// A session's shell runs as a terminal job of the sandbox's agent when it
// has them: the shell, its state (cwd, variables, functions, an activated
// virtualenv) and what it prints while no daemon is connected outlive a
// restart of the daemon. The daemon follows the job's output from offset
// 0, so a daemon that adopts the shell rebuilds the scrollback and learns
// from the command markers whether a command is running.

// sessionMeta is what the daemon keeps with a session's shell job.
type sessionMeta struct {
	Kind    string    `json:"kind"` // "session"
	ID      string    `json:"id"`
	Shell   string    `json:"shell"`
	Mode    string    `json:"mode"`
	Cols    uint16    `json:"cols"`
	Rows    uint16    `json:"rows"`
	Created time.Time `json:"created"`
	Setup   string    `json:"setup,omitempty"` // exec mode: the nonce its setup's marker carries
	Actor   string    `json:"actor"`
}

const metaSession = "session"

// jobShell is a shell run as a terminal job.
type jobShell struct {
	sb  runtime.Sandbox
	pid int
	in  runtime.JobStdin // nil once the shell has ended
	// reopen opens the shell's input again: a node's, held over a
	// connection that broke (the node restarted), fails unavailable.
	reopen func() (runtime.JobStdin, error)
}

func (j *jobShell) Write(p []byte) (int, error) {
	if j.in == nil {
		return 0, errSessionEnded
	}
	n, err := j.in.Write(p)
	if errors.Is(err, runtime.ErrUnavailable) && n == 0 && j.again() {
		return j.in.Write(p)
	}
	return n, err
}

func (j *jobShell) Resize(size runtime.TTYSize) error {
	if j.in == nil {
		return errSessionEnded
	}
	err := j.in.Resize(size)
	if errors.Is(err, runtime.ErrUnavailable) && j.again() {
		return j.in.Resize(size)
	}
	return err
}

// again opens the input anew after it failed unavailable, and says
// whether it did.
func (j *jobShell) again() bool {
	if j.reopen == nil {
		return false
	}
	in, err := j.reopen()
	if err != nil {
		return false
	}
	j.in.Close()
	j.in = in
	return true
}

// Kill ends the shell; the agent ends what it left running with it.
func (j *jobShell) Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = j.sb.Signal(ctx, j.pid, int(syscall.SIGKILL))
	if j.in != nil {
		j.in.Close()
	}
}

// spawnSession starts se's shell as a terminal job of jr and follows it.
// ErrUnsupported: the agent has no terminal jobs.
func (w *Work) spawnSession(ctx context.Context, sb runtime.Sandbox, jr runtime.JobRunner, se *Session, setup string, rreq runtime.ExecRequest) error {
	meta, err := json.Marshal(sessionMeta{Kind: metaSession, ID: se.id, Shell: se.shell, Mode: se.mode,
		Cols: se.size.Cols, Rows: se.size.Rows, Created: se.created, Setup: setup, Actor: se.rec.Actor()})
	if err != nil {
		return err
	}
	rreq.Stdin, rreq.Stdout, rreq.Stderr = nil, nil, nil
	info, err := jr.Spawn(ctx, rreq, runtime.JobOptions{Meta: meta})
	if err != nil {
		return err
	}
	in, err := jr.OpenInput(w.life, info.Pid)
	sh := &jobShell{sb: sb, pid: info.Pid, in: in, reopen: func() (runtime.JobStdin, error) { return jr.OpenInput(w.life, info.Pid) }}
	if err != nil {
		sh.Kill()
		return err
	}
	se.sh = sh
	w.goFollowSession(se, jr, info.Pid, &shellFeed{se: se})
	return nil
}

// goFollowSession starts the follower of se's shell job (followSession).
func (w *Work) goFollowSession(se *Session, jr runtime.JobRunner, pid int, f *shellFeed) {
	w.goFollow(&se.following, func(ctx context.Context) { w.followSession(ctx, se, jr, pid, f) })
}

// followSession feeds the shell job's output, from offset 0, to se (past
// offset audited into the audit log too) until the shell ends, the
// sandbox is gone, or the service closes (the shell goes on, for the next
// daemon).
func (w *Work) followSession(ctx context.Context, se *Session, jr runtime.JobRunner, pid int, f *shellFeed) {
	next, out := func() int64 { return f.next }, f.out
	st, err := followJob(ctx, jr, pid, next, runtime.AttachFollow, out)
	switch {
	case err == nil:
		w.finishSession(se, st, nil)
		jr.Forget(w.life, pid)
	case errors.Is(err, errStopped) && w.life.Err() == nil:
		w.finishSession(se, runtime.ExitStatus{}, errSandboxGone)
	case errors.Is(err, errStopped):
		se.rec.Flush()
	default:
		w.finishSession(se, runtime.ExitStatus{}, err)
	}
}

// shellFeed feeds a shell job's output to its session: past offset
// audited into the audit log too. next is where it goes on from.
type shellFeed struct {
	se      *Session
	audited int64
	next    int64
}

func (f *shellFeed) out(o runtime.JobOutput) error {
	se := f.se
	if o.Dropped > 0 {
		se.skipped(o.Offset)
		f.next = o.Offset
		return nil
	}
	end := o.Offset + int64(len(o.Data))
	switch {
	case end <= f.audited:
		se.feed(o.Data, end, true, false)
	case o.Offset < f.audited:
		cut := f.audited - o.Offset
		se.feed(o.Data[:cut], f.audited, true, false)
		se.feed(o.Data[cut:], end, true, true)
	default:
		se.feed(o.Data, end, true, true)
	}
	f.next = end
	return nil
}

// adoptSession follows again a session's shell that an earlier daemon
// started in sandbox id. t.mu is held.
func (w *Work) adoptSession(ctx context.Context, id string, sb runtime.Sandbox, jr runtime.JobRunner, t *workload, j runtime.JobInfo, m sessionMeta, log Log) {
	if len(t.sessions) >= MaxSessions || t.sessions[m.ID] != nil {
		return
	}
	se := newSession(m.ID, m.Shell, m.Mode, m.Created, runtime.TTYSize{Cols: m.Cols, Rows: m.Rows})
	if m.Mode == SessionModeExec {
		se.setup = setupMarker(m.Setup)
	}
	se.rec = log.As(m.Actor).Session(se.id)
	sh := &jobShell{sb: sb, pid: j.Pid, reopen: func() (runtime.JobStdin, error) { return jr.OpenInput(w.life, j.Pid) }}
	if j.Running {
		in, err := jr.OpenInput(w.life, j.Pid)
		if err != nil {
			w.log.Warn("reconcile: open a session's terminal", "sandbox", id, "session", m.ID, "err", err)
		}
		sh.in = in
	}
	se.sh = sh
	t.sessions[se.id] = se
	f := &shellFeed{se: se, audited: log.SessionOutput(ctx)[m.ID]}
	// What the shell printed so far, before the daemon serves: the
	// session's state (a command running) is known from it.
	if _, err := jr.Attach(ctx, j.Pid, 0, runtime.AttachRead, f.out); err != nil {
		w.log.Warn("reconcile: read a session's output", "sandbox", id, "session", m.ID, "err", err)
	}
	w.goFollowSession(se, jr, j.Pid, f)
}
