package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/pricing"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// Metrics is what one sandbox used: live while it runs, final (and never
// changing again) once it has ended. Egress bytes are on the sandbox's
// side of the proxy: out from the sandbox, in to it; an open connection's
// bytes count when it closes.
type Metrics struct {
	SandboxID       string  `json:"sandbox_id"`
	State           string  `json:"state"`
	Final           bool    `json:"final"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	// MemoryBytes is the memory in use now, while the sandbox runs (0
	// once it has ended).
	MemoryBytes    int64     `json:"memory_bytes"`
	WallSeconds    float64   `json:"wall_seconds"`
	EgressBytesOut int64     `json:"egress_bytes_out"`
	EgressBytesIn  int64     `json:"egress_bytes_in"`
	ExecCount      int64     `json:"exec_count"`
	CreatedAt      time.Time `json:"created_at"`
	EndedAt        time.Time `json:"ended_at,omitzero"`
	// Model is what its model calls used, counted at the egress proxy.
	Model ModelTotals `json:"model"`
	// CostUSD prices all of it by the operator's price table; left out
	// when the server has none.
	CostUSD *Cost `json:"cost_usd,omitempty"`
}

// UsageQuery selects the sandboxes created in [From, To) (zero bounds are
// open) of one tenant, or of every tenant for an admin leaving TenantID
// empty.
type UsageQuery struct {
	From, To time.Time
	TenantID string
}

// UsageReport is GET /v1/usage: the usage of the sandboxes created in the
// window, summed per tenant. A sandbox counts whole in the window it was
// created in, so reports of adjacent windows add up.
type UsageReport struct {
	From    time.Time     `json:"from,omitzero"`
	To      time.Time     `json:"to"`
	Tenants []TenantUsage `json:"tenants"`
}

// TenantUsage is one tenant's line of a UsageReport. MemoryPeakBytes is
// the highest peak of any one of its sandboxes. StorageBytes is what the
// server keeps for the tenant now, whatever the window (what its storage
// quota counts).
type TenantUsage struct {
	TenantID        string  `json:"tenant_id"`
	Sandboxes       int64   `json:"sandboxes"`
	SandboxHours    float64 `json:"sandbox_hours"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	EgressBytesOut  int64   `json:"egress_bytes_out"`
	EgressBytesIn   int64   `json:"egress_bytes_in"`
	ExecCount       int64   `json:"exec_count"`
	StorageBytes    int64   `json:"storage_bytes"`
	// MemoryGiBSeconds is each sandbox's memory limit times its wall
	// time, summed: what memory is priced by.
	MemoryGiBSeconds float64     `json:"memory_gib_seconds"`
	Model            ModelTotals `json:"model"`
	// CostUSD is left out when the server has no price table.
	CostUSD *Cost `json:"cost_usd,omitempty"`
}

// SandboxMetrics returns a sandbox's usage: read live from its cgroup and
// the daemon's counters while it runs, from the store once it has ended
// (also after a restart, and for as long as its record is kept).
func (s *Service) SandboxMetrics(ctx context.Context, c Caller, id string) (Metrics, error) {
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return Metrics{}, err
	}
	var u store.SandboxUsage
	var memNow int64
	end := s.now()
	switch rec.State {
	case sandboxrec.Running, sandboxrec.Paused:
		u, memNow, _ = s.liveUsageNow(ctx, id)
	case sandboxrec.Stopped, sandboxrec.Failed:
		end = rec.EndedAt
		s.meter.final.Flush()
		u, err = s.st.GetUsage(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return Metrics{}, fmt.Errorf("usage of %s: %w", id, err)
		}
	}
	m := Metrics{
		SandboxID: rec.ID, State: rec.State, Final: !rec.EndedAt.IsZero(),
		CPUSeconds: u.CPUSeconds, MemoryPeakBytes: u.MemoryPeakBytes, MemoryBytes: memNow,
		EgressBytesOut: u.EgressBytesOut, EgressBytesIn: u.EgressBytesIn, ExecCount: u.ExecCount,
		CreatedAt: rec.CreatedAt, EndedAt: rec.EndedAt, Model: modelTotals(u.Model),
	}
	if !end.IsZero() && end.After(rec.CreatedAt) {
		m.WallSeconds = end.Sub(rec.CreatedAt).Seconds()
	}
	if u.MemoryMB == 0 {
		u.MemoryMB = rec.MemoryMB
	}
	m.CostUSD = s.cost(u, m.WallSeconds)
	return m, nil
}

// Usage sums usage per tenant. An admin key sees every tenant, or the one
// it names; any other key sees its own tenant only, and another tenant's
// id is "not found", as everywhere. Running sandboxes count with their
// usage so far.
func (s *Service) Usage(ctx context.Context, c Caller, q UsageQuery) (UsageReport, error) {
	switch {
	case c.TenantID == "" || c.SandboxID != "":
		return UsageReport{}, fmt.Errorf("%w: usage needs an API key", ErrInvalid)
	case !q.To.IsZero() && !q.From.Before(q.To):
		return UsageReport{}, fmt.Errorf("%w: from must be before to", ErrInvalid)
	case !c.Admin && q.TenantID != "" && q.TenantID != c.TenantID:
		return UsageReport{}, fmt.Errorf("%w: tenant %s", ErrNotFound, q.TenantID)
	case !c.Admin:
		q.TenantID = c.TenantID
	case q.TenantID != "":
		if _, err := s.st.GetTenant(ctx, q.TenantID); errors.Is(err, store.ErrNotFound) {
			return UsageReport{}, fmt.Errorf("%w: tenant %s", ErrNotFound, q.TenantID)
		} else if err != nil {
			return UsageReport{}, fmt.Errorf("load tenant %s: %w", q.TenantID, err)
		}
	}
	now := s.now()
	if q.To.IsZero() {
		q.To = now
	}
	// What the running sandboxes used up to this call is in the answer,
	// and what the ended ones did.
	s.flushUsage(ctx)
	s.meter.final.Flush()
	rows, err := s.st.UsageByTenant(ctx, store.UsageFilter{TenantID: q.TenantID, From: q.From, To: q.To, Now: now})
	if err != nil {
		return UsageReport{}, err
	}
	rep := UsageReport{From: q.From, To: q.To, Tenants: make([]TenantUsage, 0, len(rows))}
	for _, r := range rows {
		rep.Tenants = append(rep.Tenants, TenantUsage{
			TenantID: r.TenantID, Sandboxes: r.Sandboxes, SandboxHours: r.SandboxSeconds / 3600,
			CPUSeconds: r.CPUSeconds, MemoryPeakBytes: r.MemoryPeakBytes,
			EgressBytesOut: r.EgressBytesOut, EgressBytesIn: r.EgressBytesIn, ExecCount: r.ExecCount,
			MemoryGiBSeconds: r.MemoryGiBSeconds, Model: modelTotals(r.Model),
		})
		if p := s.opts.Prices; p != nil {
			c := NewCost(r.Model.CostUSD, p.ComputeCost(pricing.Resources{CPUSeconds: r.CPUSeconds,
				MemoryGiBSeconds: r.MemoryGiBSeconds, EgressBytes: r.EgressBytesOut}))
			rep.Tenants[len(rep.Tenants)-1].CostUSD = &c
		}
	}
	// One tenant asked for gets its line even when it used nothing.
	if q.TenantID != "" && len(rep.Tenants) == 0 {
		rep.Tenants = append(rep.Tenants, TenantUsage{TenantID: q.TenantID})
	}
	// What each tenant keeps now, whatever the window.
	for i := range rep.Tenants {
		rep.Tenants[i].StorageBytes = s.audit.storageUsed(rep.Tenants[i].TenantID)
	}
	return rep, nil
}
