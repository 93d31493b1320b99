package api

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// The fake keeps no shells: one session per call, commands echoed back.

func (m *fakeManager) CreateSession(_ context.Context, c sandbox.Caller, id string, req sandbox.SessionRequest) (sandbox.SessionInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return sandbox.SessionInfo{}, err
	}
	return sandbox.SessionInfo{ID: "ses-1", Shell: "bash", State: "ready", CreatedAt: t0}, nil
}

func (m *fakeManager) ListSessions(_ context.Context, c sandbox.Caller, id string) ([]sandbox.SessionInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	return []sandbox.SessionInfo{}, nil
}

func (m *fakeManager) SessionExec(_ context.Context, c sandbox.Caller, id, sid string, req sandbox.SessionExecRequest) (sandbox.SessionExecResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return sandbox.SessionExecResult{}, err
	}
	if sid != "ses-1" {
		return sandbox.SessionExecResult{}, fmt.Errorf("%w: no session %s", sandbox.ErrNotFound, sid)
	}
	return sandbox.SessionExecResult{Output: req.Command + "\n"}, nil
}

func (m *fakeManager) DeleteSession(_ context.Context, c sandbox.Caller, id, sid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	if sid != "ses-1" {
		return fmt.Errorf("%w: no session %s", sandbox.ErrNotFound, sid)
	}
	return nil
}
