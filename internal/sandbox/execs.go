package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/store"
)

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

// execByID finds a caller's command by exec id: one streamed to a client
// or a background process.
func (s *Service) execByID(ctx context.Context, c Caller, id, execID string) (*live.Proc, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	return s.work.ByExecID(id, execID)
}

// GetExec describes the command with exec id execID: from what the daemon
// keeps (a command streamed to a client, a background process), else from
// the audit log (any command the sandbox ran, session commands too).
func (s *Service) GetExec(ctx context.Context, c Caller, id, execID string) (ExecInfo, error) {
	// The sandbox first: a not-found for the sandbox (another tenant's)
	// must not fall through to its audit log, which the store reads for
	// anyone.
	if _, err := s.resolve(ctx, c, id); err != nil {
		return ExecInfo{}, err
	}
	p, err := s.work.ByExecID(id, execID)
	if err == nil {
		in := p.Info()
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
