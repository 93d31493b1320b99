package api

import (
	"context"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// SandboxMetrics answers fixed numbers for a sandbox the caller may see.
func (m *fakeManager) SandboxMetrics(_ context.Context, c sandbox.Caller, id string) (sandbox.Metrics, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return sandbox.Metrics{}, err
	}
	return sandbox.Metrics{SandboxID: id, State: sb.State, CPUSeconds: 1.5, MemoryPeakBytes: 1 << 20,
		WallSeconds: 60, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 3, CreatedAt: sb.CreatedAt}, nil
}

// Usage keeps the query it got and answers one line for the tenant the
// real Service would report.
func (m *fakeManager) Usage(_ context.Context, c sandbox.Caller, q sandbox.UsageQuery) (sandbox.UsageReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return sandbox.UsageReport{}, m.err
	}
	m.lastUsage = q
	tenant := q.TenantID
	if tenant == "" {
		tenant = c.TenantID
	}
	return sandbox.UsageReport{From: q.From, To: q.To, Tenants: []sandbox.TenantUsage{{TenantID: tenant, Sandboxes: 2, SandboxHours: 0.5}}}, nil
}
