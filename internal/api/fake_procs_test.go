package api

import (
	"context"
	"fmt"
	"io"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// The fake has no background processes: routes answer like the service
// for a sandbox that has none.

func (m *fakeManager) StartBackground(_ context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ProcInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return sandbox.ProcInfo{}, err
	}
	m.lastExec = req
	return sandbox.ProcInfo{Pid: 42, Tag: req.Tag, State: "running"}, nil
}

func (m *fakeManager) ListProcesses(_ context.Context, c sandbox.Caller, id string) ([]sandbox.ProcInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	return []sandbox.ProcInfo{}, nil
}

func (m *fakeManager) noProc(c sandbox.Caller, id string, pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return err
	}
	return fmt.Errorf("%w: no background process %d", sandbox.ErrNotFound, pid)
}

func (m *fakeManager) ProcessOutput(_ context.Context, c sandbox.Caller, id string, pid int, _ int64, _ bool, _ sandbox.ProcStream) error {
	return m.noProc(c, id, pid)
}

func (m *fakeManager) WriteStdin(_ context.Context, c sandbox.Caller, id string, pid int, _ io.Reader) (int64, error) {
	return 0, m.noProc(c, id, pid)
}

func (m *fakeManager) CloseStdin(_ context.Context, c sandbox.Caller, id string, pid int) error {
	return m.noProc(c, id, pid)
}

func (m *fakeManager) SignalProcess(_ context.Context, c sandbox.Caller, id string, pid, _ int) error {
	return m.noProc(c, id, pid)
}
