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
	return sandbox.SessionInfo{ID: "ses-1", Shell: "bash", Mode: "exec", State: "ready", CreatedAt: t0}, nil
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

// AttachSession gives an echo terminal: what is typed comes back, a
// resize is reported as a line, and typing "exit" ends it with status 3.
func (m *fakeManager) AttachSession(_ context.Context, c sandbox.Caller, id, sid string, _ int64) (sandbox.Terminal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	if sid != "ses-1" {
		return nil, fmt.Errorf("%w: no session %s", sandbox.ErrNotFound, sid)
	}
	return &fakeTerminal{out: make(chan []byte, 16)}, nil
}

type fakeTerminal struct {
	out chan []byte
}

func (t *fakeTerminal) Next(ctx context.Context) ([]byte, *sandbox.ExecResult, error) {
	select {
	case b := <-t.out:
		if string(b) == "exit" {
			return nil, &sandbox.ExecResult{ExitCode: 3}, nil
		}
		if string(b) == "gone" {
			return nil, nil, fmt.Errorf("%w: the sandbox was destroyed", sandbox.ErrConflict)
		}
		return b, nil, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func (t *fakeTerminal) Write(p []byte) (int, error) {
	t.out <- append([]byte(nil), p...)
	return len(p), nil
}

func (t *fakeTerminal) Resize(cols, rows uint16) error {
	if cols == 0 || rows == 0 {
		return fmt.Errorf("%w: terminal size %dx%d", sandbox.ErrInvalid, cols, rows)
	}
	t.out <- fmt.Appendf(nil, "size %d %d", cols, rows)
	return nil
}

func (t *fakeTerminal) Close() {}
