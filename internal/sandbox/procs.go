package sandbox

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/airlockhq/airlock/internal/live"
)

// ProcInfo describes a background process.
type ProcInfo = live.ProcInfo

// ProcStream receives a background process's output from an offset on.
type ProcStream = live.ProcStream

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
	req.Cwd = rreq.Cwd
	return s.work.StartBackground(ctx, id, sb, rreq, req.Tag, describe(req), func() live.CommandRecorder {
		return s.recordExec(c, id, req, true, "")
	})
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
	return s.work.Procs(id), nil
}

// proc finds a caller's background process.
func (s *Service) proc(ctx context.Context, c Caller, id string, pid int) (*live.Proc, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	return s.work.Proc(id, pid)
}

// WriteStdin copies r to a background process's stdin.
func (s *Service) WriteStdin(ctx context.Context, c Caller, id string, pid int, r io.Reader) (int64, error) {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return 0, err
	}
	return p.WriteStdin(ctx, r)
}

// CloseStdin ends a background process's stdin (it reads EOF).
func (s *Service) CloseStdin(ctx context.Context, c Caller, id string, pid int) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	return p.CloseStdin(ctx)
}

// SignalProcess sends sig to a background process.
func (s *Service) SignalProcess(ctx context.Context, c Caller, id string, pid, sig int) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	if p.Info().State != "running" {
		return fmt.Errorf("%w: process %d has ended", ErrConflict, pid)
	}
	_, sb, err := s.live(ctx, c, id)
	if err != nil {
		return err
	}
	return p.Signal(ctx, sb, sig)
}

// ProcessOutput sends a background process's kept output from offset on
// to out and, with follow, what it writes next until it ends. A process
// lost with its sandbox ends the stream with that error, never a hang.
func (s *Service) ProcessOutput(ctx context.Context, c Caller, id string, pid int, offset int64, follow bool, out ProcStream) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	return s.work.Output(ctx, id, p, offset, follow, out)
}

// ExecOutput is ProcessOutput for the command with exec id execID: one
// streamed to a client (its client cut off by a restart of the daemon
// re-attaches with it) or a background process.
func (s *Service) ExecOutput(ctx context.Context, c Caller, id, execID string, offset int64, follow bool, out ProcStream) error {
	p, err := s.execByID(ctx, c, id, execID)
	if err != nil {
		return err
	}
	return s.work.Output(ctx, id, p, offset, follow, out)
}
