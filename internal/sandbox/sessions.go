package sandbox

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
)

// Session modes.
const (
	// SessionModeExec is a shell driven by calls: quiet (no prompt, no
	// echo, no line editing) so each command's output and status come back
	// exactly. Attached clients watch the commands and their output.
	SessionModeExec = live.SessionModeExec
	// SessionModeInteractive is a shell for a person at a terminal:
	// prompt, echo and line editing, driven only through attach.
	SessionModeInteractive = live.SessionModeInteractive
)

// SessionRequest is POST /v1/sandboxes/{id}/sessions.
type SessionRequest struct {
	Shell string            `json:"shell,omitempty"` // "bash", the default and only one
	Mode  string            `json:"mode,omitempty"`  // "exec" (the default) or "interactive"
	Cwd   string            `json:"cwd,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Cols  uint16            `json:"cols,omitempty"` // default 120
	Rows  uint16            `json:"rows,omitempty"` // default 40
}

// SessionInfo describes a session.
type SessionInfo = live.SessionInfo

// SessionExecRequest runs one command in a session's shell.
type SessionExecRequest struct {
	Command  string `json:"command"`
	TimeoutS int64  `json:"timeout_s,omitempty"` // default 60
}

// SessionExecResult is what one command in a session did.
type SessionExecResult = live.SessionExecResult

// Terminal is one client attached to a session's terminal (see
// live.Terminal).
type Terminal = live.Terminal

// CreateSession starts a shell on a terminal in a running sandbox.
func (s *Service) CreateSession(ctx context.Context, c Caller, id string, req SessionRequest) (SessionInfo, error) {
	if req.Shell == "" {
		req.Shell = "bash"
	}
	if req.Mode == "" {
		req.Mode = SessionModeExec
	}
	argv, err := live.Shell(req.Mode, req.Shell)
	if err != nil {
		return SessionInfo{}, err
	}
	if req.Cols == 0 {
		req.Cols = 120
	}
	if req.Rows == 0 {
		req.Rows = 40
	}
	if err := live.ValidSize(req.Cols, req.Rows); err != nil {
		return SessionInfo{}, err
	}
	if err := ValidEnv(req.Env); err != nil {
		return SessionInfo{}, err
	}
	env := req.Env
	if req.Mode == SessionModeInteractive && env["TERM"] == "" {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["TERM"] = "xterm-256color"
	}
	sb, rreq, err := s.prepareExec(ctx, c, id, ExecRequest{Cmd: argv, Cwd: req.Cwd, Env: env})
	if err != nil {
		return SessionInfo{}, err
	}
	size := runtime.TTYSize{Cols: req.Cols, Rows: req.Rows}
	return s.work.CreateSession(ctx, id, sb, rreq, req.Shell, req.Mode, size, liveRecorder{s, s.auditor(c, id, c.TenantID)})
}

// sessionExec runs one command in the session's shell and returns once it
// ends. On timeout the command gets SIGINT (as ^C would send), and the
// session goes on.
func (s *Service) sessionExec(ctx context.Context, c Caller, id, sid string, req SessionExecRequest) (SessionExecResult, error) {
	if req.Command == "" {
		return SessionExecResult{}, fmt.Errorf("%w: command is required", ErrInvalid)
	}
	if strings.IndexByte(req.Command, 0) >= 0 {
		// A shell drops a NUL: what would run is not what was sent.
		return SessionExecResult{}, fmt.Errorf("%w: NUL byte in command", ErrInvalid)
	}
	if req.TimeoutS < 0 || req.TimeoutS > int64(MaxTimeout/time.Second) {
		return SessionExecResult{}, fmt.Errorf("%w: timeout_s %d must be between 0 and %d", ErrInvalid, req.TimeoutS, int64(MaxTimeout/time.Second))
	}
	timeout := time.Duration(req.TimeoutS) * time.Second
	if timeout == 0 {
		timeout = time.Minute
	}
	se, err := s.session(ctx, c, id, sid)
	if err != nil {
		return SessionExecResult{}, err
	}
	if se.Mode() == SessionModeExec {
		s.meterExec(id)
	}
	return s.work.SessionExec(ctx, id, se, req.Command, timeout, func() live.CommandRecorder {
		rec := s.recordExec(c, id, ExecRequest{Command: req.Command}, false, sid)
		s.auditor(c, id, c.TenantID).output(audit.SessionInput, map[string]any{"session_id": sid}, s.scrubber(id).Bytes([]byte(req.Command+"\n")))
		return rec
	})
}

// session finds a caller's session.
func (s *Service) session(ctx context.Context, c Caller, id, sid string) (*live.Session, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	return s.work.Session(id, sid)
}

// ListSessions returns a sandbox's sessions.
func (s *Service) ListSessions(ctx context.Context, c Caller, id string) ([]SessionInfo, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	return s.work.Sessions(id), nil
}

// DeleteSession ends a session's shell (hanging up its terminal).
func (s *Service) DeleteSession(ctx context.Context, c Caller, id, sid string) error {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return err
	}
	return s.work.DeleteSession(id, sid)
}

// AttachSession attaches a client to a session's terminal, from offset on
// in its output (0: all the scrollback holds); see live.Work.Attach.
func (s *Service) AttachSession(ctx context.Context, c Caller, id, sid string, offset int64) (Terminal, error) {
	se, err := s.session(ctx, c, id, sid)
	if err != nil {
		return nil, err
	}
	return s.work.Attach(id, se, offset, s.terminalRecorder(s.auditor(c, id, c.TenantID), sid))
}
