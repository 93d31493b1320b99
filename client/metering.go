package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// SandboxMetrics is what one sandbox used: live while it runs, final
// (Final set) once it has ended. Egress bytes are counted on the
// sandbox's side of the proxy, out from it and in to it.
type SandboxMetrics struct {
	SandboxID       string    `json:"sandbox_id"`
	State           string    `json:"state"`
	Final           bool      `json:"final"`
	CPUSeconds      float64   `json:"cpu_seconds"`
	MemoryPeakBytes int64     `json:"memory_peak_bytes"`
	MemoryBytes     int64     `json:"memory_bytes"` // in use now; 0 once ended
	WallSeconds     float64   `json:"wall_seconds"`
	EgressBytesOut  int64     `json:"egress_bytes_out"`
	EgressBytesIn   int64     `json:"egress_bytes_in"`
	ExecCount       int64     `json:"exec_count"`
	CreatedAt       time.Time `json:"created_at"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	// Model is what its model calls used, counted at its egress proxy.
	Model ModelTotals `json:"model"`
	// CostUSD is nil on a server without a price table.
	CostUSD *Cost `json:"cost_usd,omitempty"`
}

// UsageReport sums, per tenant, the usage of the sandboxes created in
// [From, To).
type UsageReport struct {
	From    time.Time     `json:"from,omitzero"`
	To      time.Time     `json:"to"`
	Tenants []TenantUsage `json:"tenants"`
}

// TenantUsage is one tenant's line of a UsageReport.
type TenantUsage struct {
	TenantID        string  `json:"tenant_id"`
	Sandboxes       int64   `json:"sandboxes"`
	SandboxHours    float64 `json:"sandbox_hours"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	EgressBytesOut  int64   `json:"egress_bytes_out"`
	EgressBytesIn   int64   `json:"egress_bytes_in"`
	ExecCount       int64   `json:"exec_count"`
	// StorageBytes is what the server keeps for the tenant now, whatever
	// the window: what its storage quota counts.
	StorageBytes int64 `json:"storage_bytes"`
	// MemoryGiBSeconds is each sandbox's memory limit times its wall
	// time, summed: what memory is priced by.
	MemoryGiBSeconds float64     `json:"memory_gib_seconds"`
	Model            ModelTotals `json:"model"`
	// CostUSD is nil on a server without a price table.
	CostUSD *Cost `json:"cost_usd,omitempty"`
}

// SandboxMetrics returns a sandbox's usage.
func (c *Client) SandboxMetrics(ctx context.Context, id string) (SandboxMetrics, error) {
	var m SandboxMetrics
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/metrics"), nil, nil, &m)
	return m, err
}

// Usage returns usage per tenant for the sandboxes created in [from, to):
// a zero from leaves the window open at the start, a zero to ends it now.
// An admin key sees every tenant, or only tenant when it is set; any
// other key sees its own tenant.
func (c *Client) Usage(ctx context.Context, from, to time.Time, tenant string) (UsageReport, error) {
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.Format(time.RFC3339Nano))
	}
	if !to.IsZero() {
		q.Set("to", to.Format(time.RFC3339Nano))
	}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	var r UsageReport
	err := c.doJSON(ctx, http.MethodGet, "/v1/usage", q, nil, &r)
	return r, err
}
