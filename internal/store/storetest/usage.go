package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store"
)

// testSaveUsageMerges: a row grows and ends, and no later write (a
// periodic flush racing with the end, a restarted daemon that lost its
// counters) sets a total back or reopens it.
func testSaveUsageMerges(t *testing.T, h *harness) {
	s := h.s
	if _, err := s.GetUsage(ctx, "sb_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("usage of an unknown sandbox: %v, want ErrNotFound", err)
	}
	run := store.SandboxUsage{SandboxID: "sb_1", TenantID: "ten_1", CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
		CPUSeconds: 1.5, MemoryPeakBytes: 100, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 3, MemoryMB: 512,
		Model: store.ModelUsage{Calls: 2, Unmetered: 1, InputTokens: 100, CachedInputTokens: 50, OutputTokens: 30, ReasoningTokens: 10, CostUSD: 0.25}}
	save := func(u store.SandboxUsage) {
		t.Helper()
		must(t, s.SaveUsage(ctx, []store.SandboxUsage{u}))
	}
	get := func(s store.Store) store.SandboxUsage {
		t.Helper()
		u, err := s.GetUsage(ctx, "sb_1")
		must(t, err)
		return u
	}
	save(run)
	if d := cmp.Diff(run, get(s)); d != "" {
		t.Errorf("first save (-want +got):\n%s", d)
	}
	end := run
	end.EndedAt, end.UpdatedAt = t0.Add(time.Minute), t0.Add(time.Minute)
	end.CPUSeconds, end.ExecCount, end.EgressBytesIn = 2.5, 4, 25
	end.Model.Calls, end.Model.OutputTokens, end.Model.CostUSD = 3, 45, 0.375
	save(end)
	// A stale flush after the end: lower numbers, not ended.
	stale := run
	stale.CPUSeconds, stale.MemoryPeakBytes, stale.ExecCount = 0, 0, 0
	stale.Model = store.ModelUsage{Calls: 1}
	save(stale)
	// A second end, later, does not move the first.
	late := end
	late.EndedAt = t0.Add(time.Hour)
	save(late)
	want := end
	want.UpdatedAt = late.UpdatedAt
	if d := cmp.Diff(want, get(s)); d != "" {
		t.Errorf("after end and stale writes (-want +got):\n%s", d)
	}
	if got := get(s); got.CreatedAt.Location() != time.UTC {
		t.Errorf("times in %v, want UTC", got.CreatedAt.Location())
	}
	s = h.restart(t)
	if d := cmp.Diff(want, get(s)); d != "" {
		t.Errorf("after reopening (-want +got):\n%s", d)
	}
	if err := s.SaveUsage(ctx, []store.SandboxUsage{{SandboxID: "sb_2"}}); err == nil {
		t.Error("a row without tenant and creation time was saved")
	}
	if err := s.SaveUsage(ctx, []store.SandboxUsage{{SandboxID: "sb_3", TenantID: "ten_1", CreatedAt: t0}, {SandboxID: "sb_4"}}); err == nil {
		t.Error("a batch with an invalid row was saved")
	}
	if _, err := s.GetUsage(ctx, "sb_3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused batch wrote part of itself: %v", err)
	}
}

func testUsageByTenant(t *testing.T, h *harness) {
	s := h.s
	hr := time.Hour
	rows := []store.SandboxUsage{
		// Tenant a: two ended sandboxes in the first hour, one running.
		{SandboxID: "a1", TenantID: "a", CreatedAt: t0, EndedAt: t0.Add(30 * time.Minute),
			CPUSeconds: 10, MemoryPeakBytes: 500, EgressBytesOut: 1, EgressBytesIn: 2, ExecCount: 3, MemoryMB: 1024,
			Model: store.ModelUsage{Calls: 1, InputTokens: 10, CachedInputTokens: 5, OutputTokens: 3, ReasoningTokens: 1, CostUSD: 0.5}},
		{SandboxID: "a2", TenantID: "a", CreatedAt: t0.Add(10 * time.Minute), EndedAt: t0.Add(40 * time.Minute),
			CPUSeconds: 5, MemoryPeakBytes: 900, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 30, MemoryMB: 512,
			Model: store.ModelUsage{Calls: 2, Unmetered: 1, InputTokens: 20, OutputTokens: 6, CostUSD: 0.25}},
		{SandboxID: "a3", TenantID: "a", CreatedAt: t0.Add(2 * hr), CPUSeconds: 1, MemoryPeakBytes: 100, ExecCount: 1, MemoryMB: 2048},
		// Tenant b: one sandbox in the first hour.
		{SandboxID: "b1", TenantID: "b", CreatedAt: t0.Add(59 * time.Minute), EndedAt: t0.Add(2 * hr),
			CPUSeconds: 7, MemoryPeakBytes: 50, EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
	}
	must(t, s.SaveUsage(ctx, rows))
	now := t0.Add(3 * hr) // a3 has run an hour by then
	for _, tc := range []struct {
		name string
		f    store.UsageFilter
		want []store.TenantUsage
	}{
		{"everything", store.UsageFilter{Now: now}, []store.TenantUsage{
			{TenantID: "a", Sandboxes: 3, SandboxSeconds: 3600 + 1800 + 1800, CPUSeconds: 16, MemoryPeakBytes: 900,
				EgressBytesOut: 11, EgressBytesIn: 22, ExecCount: 34, MemoryGiBSeconds: 1800 + 900 + 7200,
				Model: store.ModelUsage{Calls: 3, Unmetered: 1, InputTokens: 30, CachedInputTokens: 5, OutputTokens: 9, ReasoningTokens: 1, CostUSD: 0.75}},
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"first hour, half-open", store.UsageFilter{From: t0, To: t0.Add(hr), Now: now}, []store.TenantUsage{
			{TenantID: "a", Sandboxes: 2, SandboxSeconds: 3600, CPUSeconds: 15, MemoryPeakBytes: 900,
				EgressBytesOut: 11, EgressBytesIn: 22, ExecCount: 33, MemoryGiBSeconds: 1800 + 900,
				Model: store.ModelUsage{Calls: 3, Unmetered: 1, InputTokens: 30, CachedInputTokens: 5, OutputTokens: 9, ReasoningTokens: 1, CostUSD: 0.75}},
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"from the start of a2", store.UsageFilter{TenantID: "a", From: t0.Add(10 * time.Minute), To: t0.Add(10 * hr), Now: now}, []store.TenantUsage{
			{TenantID: "a", Sandboxes: 2, SandboxSeconds: 1800 + 3600, CPUSeconds: 6, MemoryPeakBytes: 900,
				EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 31, MemoryGiBSeconds: 900 + 7200,
				Model: store.ModelUsage{Calls: 2, Unmetered: 1, InputTokens: 20, OutputTokens: 6, CostUSD: 0.25}},
		}},
		{"tenant b only", store.UsageFilter{TenantID: "b", Now: now}, []store.TenantUsage{
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"running before it started", store.UsageFilter{TenantID: "a", From: t0.Add(2 * hr), Now: t0}, []store.TenantUsage{
			{TenantID: "a", Sandboxes: 1, CPUSeconds: 1, MemoryPeakBytes: 100, ExecCount: 1},
		}},
		{"nothing there", store.UsageFilter{From: t0.Add(5 * hr), Now: now}, nil},
		{"unknown tenant", store.UsageFilter{TenantID: "c", Now: now}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.UsageByTenant(ctx, tc.f)
			must(t, err)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
