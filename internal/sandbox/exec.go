package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// runExec runs req to its end and returns its output, each stream capped at
// OutputCap and made valid UTF-8 (the result is JSON text).
func (s *Service) runExec(ctx context.Context, c Caller, id string, req ExecRequest) (ExecResult, error) {
	sb, rreq, err := s.prepareExec(ctx, c, id, req)
	if err != nil {
		return ExecResult{}, err
	}
	defer s.idle.hold(id, s.now)()
	defer s.timeExec()()
	req.Cwd = rreq.Cwd
	rec := s.recordExec(c, id, req, false, "")
	var stdout, stderr capped
	var res ExecResult
	if jr, ok := sb.(runtime.JobRunner); ok {
		res, err = s.work.ExecJob(ctx, id, sb, jr, describe(req), rreq, rec, cappedStream{&stdout, &stderr})
	}
	if _, ok := sb.(runtime.JobRunner); !ok || errors.Is(err, runtime.ErrUnsupported) {
		// An agent that predates protocol 4: the command runs on this
		// daemon's connection, and ends with it.
		rreq.Stdout, rreq.Stderr = rec.tees(&stdout, &stderr)
		var st runtime.ExitStatus
		st, err = sb.Exec(ctx, rreq)
		if err != nil {
			err = s.execError(ctx, id, err)
		}
		res = live.ExitResult(st)
		if err != nil {
			res = ExecResult{}
		}
		rec.Exited(res, err)
	}
	if err != nil {
		return ExecResult{}, err
	}
	res.ExecID = rec.id
	res.Stdout, res.Stderr = stdout.text(), stderr.text()
	res.Truncated = stdout.truncated || stderr.truncated
	return res, nil
}

// runExecStream runs req and hands its output to out as it comes: Started
// first, then Stdout and Stderr chunks, all from the runtime's one output
// goroutine. If out fails (the client is gone), the process tree is killed.
func (s *Service) runExecStream(ctx context.Context, c Caller, id string, req ExecRequest, out Stream) (ExecResult, error) {
	sb, rreq, err := s.prepareExec(ctx, c, id, req)
	if err != nil {
		return ExecResult{}, err
	}
	defer s.idle.hold(id, s.now)()
	defer s.timeExec()()
	req.Cwd = rreq.Cwd
	rec := s.recordExec(c, id, req, false, "")
	err = runtime.ErrUnsupported
	var res ExecResult
	if jr, ok := sb.(runtime.JobRunner); ok {
		res, err = s.work.ExecJob(ctx, id, sb, jr, describe(req), rreq, rec, out)
	}
	if errors.Is(err, runtime.ErrUnsupported) {
		// An agent that predates protocol 4: on this daemon's connection.
		res, err = s.execStream(ctx, id, sb, rreq, out, rec)
		rec.Exited(res, err)
	}
	res.ExecID = rec.id
	return res, err
}

// cappedStream collects a command's output for a JSON answer.
type cappedStream struct{ stdout, stderr *capped }

func (cappedStream) Started(int, string) error { return nil }
func (c cappedStream) Stdout(p []byte) error   { c.stdout.Write(p); return nil }
func (c cappedStream) Stderr(p []byte) error   { c.stderr.Write(p); return nil }

func (s *Service) execStream(ctx context.Context, id string, sb runtime.Sandbox, rreq runtime.ExecRequest, out Stream, rec *execRecord) (ExecResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Output may arrive before Start returns the pid; the gate holds it
	// back until Started has been sent, so events stay in order.
	g := &gate{open: make(chan struct{}), cancel: cancel}
	rreq.Stdout, rreq.Stderr = rec.tees(g.writer(out.Stdout), g.writer(out.Stderr))
	p, err := sb.Start(ctx, rreq)
	if err != nil {
		close(g.open)
		return ExecResult{}, s.execError(ctx, id, err)
	}
	if g.startErr = out.Started(p.Pid(), rec.id); g.startErr != nil {
		cancel()
	}
	close(g.open)
	// Wait returns after the output goroutine is done, so sendErr is set.
	st, err := p.Wait()
	switch {
	case g.startErr != nil:
		return ExecResult{}, fmt.Errorf("exec stream: %w", g.startErr)
	case g.sendErr != nil:
		return ExecResult{}, fmt.Errorf("exec stream: %w", g.sendErr)
	case err != nil && ctx.Err() != nil:
		return ExecResult{}, fmt.Errorf("exec stream: %w", context.Cause(ctx))
	case err != nil:
		return ExecResult{}, s.execError(ctx, id, err)
	}
	return live.ExitResult(st), nil
}

// gate orders a stream's events and stops the process when a send fails.
type gate struct {
	open     chan struct{}
	startErr error // Started's; written before open is closed
	sendErr  error // the first failed send; written by the output goroutine
	cancel   context.CancelFunc
}

type gateWriter struct {
	g    *gate
	send func([]byte) error
}

func (g *gate) writer(send func([]byte) error) gateWriter { return gateWriter{g, send} }

func (w gateWriter) Write(p []byte) (int, error) {
	<-w.g.open
	if w.g.startErr != nil || w.g.sendErr != nil {
		return len(p), nil // already failing; the output has nowhere to go
	}
	if err := w.send(p); err != nil {
		w.g.sendErr = err
		w.g.cancel()
		return 0, err
	}
	return len(p), nil
}

// prepareExec checks the request against the sandbox it targets and
// translates it for the runtime.
func (s *Service) prepareExec(ctx context.Context, c Caller, id string, req ExecRequest) (runtime.Sandbox, runtime.ExecRequest, error) {
	var rreq runtime.ExecRequest
	if err := validExec(req); err != nil {
		return nil, rreq, err
	}
	// Every form of exec maps a start's errors with execError.
	rec, sb, err := s.liveLazy(ctx, c, id)
	if err != nil {
		return nil, rreq, err
	}
	// A process may not outlive its sandbox: the reaper would kill it
	// anyway, and a timeout past that point would be a promise not kept.
	left := rec.ExpiresAt.Sub(s.now())
	if left <= 0 {
		return nil, rreq, fmt.Errorf("%w: sandbox %s has expired", ErrConflict, id)
	}
	timeout := time.Duration(req.TimeoutS) * time.Second
	if req.TimeoutS == 0 {
		timeout = left
	} else if timeout > left {
		return nil, rreq, fmt.Errorf("%w: timeout_s %d is past the sandbox's remaining %.0f s (extend it first)", ErrInvalid, req.TimeoutS, left.Seconds())
	}
	rreq = runtime.ExecRequest{Argv: req.Cmd, Shell: req.Command, Env: s.execEnv(id, req.Env), Timeout: timeout}
	if req.Cwd != "" {
		rreq.Cwd = req.Cwd
		if !path.IsAbs(rreq.Cwd) {
			// Against the sandbox's own workdir, as a shell started
			// there would resolve it.
			rreq.Cwd = path.Join(workdir(rec.Workdir), rreq.Cwd)
		}
		if err := CheckPathLength(path.Clean(rreq.Cwd)); err != nil {
			return nil, rreq, fmt.Errorf("cwd: %w", err)
		}
	}
	if req.Stdin != "" {
		rreq.Stdin = strings.NewReader(req.Stdin)
	}
	s.meterExec(id) // every exec, background ones too, goes through here
	return sb, rreq, nil
}

// validExec refuses what no sandbox could run, before any lookup.
func validExec(req ExecRequest) error {
	switch {
	case len(req.Cmd) > 0 && req.Command != "":
		return fmt.Errorf("%w: set cmd or command, not both", ErrInvalid)
	case len(req.Cmd) == 0 && req.Command == "":
		return fmt.Errorf("%w: cmd or command is required", ErrInvalid)
	case len(req.Cmd) > 0 && req.Cmd[0] == "":
		return fmt.Errorf("%w: cmd[0] is empty", ErrInvalid)
	case req.TimeoutS < 0 || req.TimeoutS > int64(MaxTimeout/time.Second):
		return fmt.Errorf("%w: timeout_s %d must be between 0 and %d", ErrInvalid, req.TimeoutS, int64(MaxTimeout/time.Second))
	}
	// A NUL would cut the string short in the kernel: what runs would not
	// be what was sent.
	switch {
	case strings.IndexByte(req.Command, 0) >= 0:
		return fmt.Errorf("%w: NUL byte in command", ErrInvalid)
	case strings.IndexByte(req.Cwd, 0) >= 0:
		return fmt.Errorf("%w: NUL byte in cwd", ErrInvalid)
	}
	for i, a := range req.Cmd {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: NUL byte in cmd[%d]", ErrInvalid, i)
		}
	}
	return ValidEnv(req.Env)
}

func workdir(w string) string {
	if w == "" {
		return DefaultWorkdir
	}
	return w
}

// execError maps a runtime error from starting or waiting for a process.
func (s *Service) execError(ctx context.Context, id string, err error) error {
	if lost, ok := s.lostError(ctx, id, err); ok {
		return lost
	}
	if gone := s.stoppedError(ctx, id); gone != nil {
		return gone
	}
	switch {
	case errors.Is(err, runtime.ErrPidLimit):
		return pidLimitError(fmt.Sprintf("exec in %s: the sandbox is at its pid limit: wait for some of its processes to end, or create it with a higher pids limit", id))
	case errors.Is(err, runtime.ErrInvalid), errors.Is(err, runtime.ErrNotFound), errors.Is(err, fs.ErrPermission):
		// A bad request or a missing or forbidden program or cwd: the
		// caller's to fix, not a missing sandbox (which 404 would say).
		return fmt.Errorf("%w: exec in %s: %v", ErrInvalid, id, err)
	}
	return fmt.Errorf("%w: exec in %s: %v", ErrUnavailable, id, err)
}

// stoppedError says why a command broke off when its sandbox was stopped
// meanwhile (deleted, expired, idle): a stop in progress is waited for, so
// the answer is the sandbox's end rather than a broken agent connection.
func (s *Service) stoppedError(ctx context.Context, id string) error {
	unlock := s.locks.lock(id)
	unlock()
	rec, err := s.st.GetSandbox(context.WithoutCancel(ctx), id)
	if err != nil || alive(rec.State) || rec.State == sandboxrec.Creating {
		return nil
	}
	why := "destroyed"
	switch {
	case rec.State == sandboxrec.Failed:
		why = "lost (" + rec.Reason + ")"
	case rec.Reason != "":
		why = "stopped (" + rec.Reason + ")"
	}
	return fmt.Errorf("%w: sandbox %s was %s while the command ran", ErrConflict, id, why)
}

// capped keeps the first OutputCap bytes written and swallows the rest, so
// a chatty process is never blocked on a full pipe and never exhausts the
// daemon's memory.
type capped struct {
	buf       []byte
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	room := OutputCap - len(c.buf)
	if len(p) > room {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf = append(c.buf, p...)
	return n, nil
}

func (c *capped) text() string { return strings.ToValidUTF8(string(c.buf), "\uFFFD") }
