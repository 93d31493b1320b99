package api

import (
	"context"
	"time"

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

// SandboxMetricsHistory answers two readings a second apart for a running
// sandbox the caller may see, none for an ended one.
func (m *fakeManager) SandboxMetricsHistory(_ context.Context, c sandbox.Caller, id string) (sandbox.MetricsHistory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return sandbox.MetricsHistory{}, err
	}
	h := sandbox.MetricsHistory{SandboxID: id, IntervalS: 10, Samples: []sandbox.Sample{}}
	if sb.State == "running" {
		at := sb.CreatedAt.Add(time.Second)
		h.Samples = []sandbox.Sample{{Time: at, CPUSeconds: 0.5, MemoryBytes: 1 << 20}, {Time: at.Add(time.Second), CPUSeconds: 1.5, MemoryBytes: 2 << 20}}
	}
	return h, nil
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
