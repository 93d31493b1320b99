package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSaveUsageMerges: a row grows and ends, and no later write (a
// periodic flush racing with the end, a restarted daemon that lost its
// counters) sets a total back or reopens it.
func TestSaveUsageMerges(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if _, err := s.GetUsage(ctx, "sb_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("usage of an unknown sandbox: %v, want ErrNotFound", err)
	}
	run := SandboxUsage{SandboxID: "sb_1", TenantID: "ten_1", CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
		CPUSeconds: 1.5, MemoryPeakBytes: 100, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 3}
	save := func(u SandboxUsage) {
		t.Helper()
		if err := s.SaveUsage(ctx, []SandboxUsage{u}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s *SQLite) SandboxUsage {
		t.Helper()
		u, err := s.GetUsage(ctx, "sb_1")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	save(run)
	want := run
	want.CreatedAt, want.UpdatedAt = t0.UTC(), run.UpdatedAt.UTC()
	if d := cmp.Diff(want, get(s)); d != "" {
		t.Errorf("first save (-want +got):\n%s", d)
	}

	end := run
	end.EndedAt, end.UpdatedAt = t0.Add(time.Minute), t0.Add(time.Minute)
	end.CPUSeconds, end.ExecCount, end.EgressBytesIn = 2.5, 4, 25
	save(end)
	// A stale flush after the end: lower numbers, not ended.
	stale := run
	stale.CPUSeconds, stale.MemoryPeakBytes, stale.ExecCount = 0, 0, 0
	save(stale)
	want = end
	want.CreatedAt, want.EndedAt, want.UpdatedAt = t0.UTC(), end.EndedAt.UTC(), end.UpdatedAt.UTC()
	if d := cmp.Diff(want, get(s)); d != "" {
		t.Errorf("after end and a stale write (-want +got):\n%s", d)
	}

	// It survives a restart of the daemon.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if d := cmp.Diff(want, get(s2)); d != "" {
		t.Errorf("after reopening (-want +got):\n%s", d)
	}
	if err := s2.SaveUsage(ctx, []SandboxUsage{{SandboxID: "sb_2"}}); err == nil {
		t.Error("a row without tenant and creation time was saved")
	}
}

func TestUsageByTenant(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	h := time.Hour
	rows := []SandboxUsage{
		// Tenant a: two ended sandboxes in the first hour, one running.
		{SandboxID: "a1", TenantID: "a", CreatedAt: t0, EndedAt: t0.Add(30 * time.Minute),
			CPUSeconds: 10, MemoryPeakBytes: 500, EgressBytesOut: 1, EgressBytesIn: 2, ExecCount: 3},
		{SandboxID: "a2", TenantID: "a", CreatedAt: t0.Add(10 * time.Minute), EndedAt: t0.Add(40 * time.Minute),
			CPUSeconds: 5, MemoryPeakBytes: 900, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 30},
		{SandboxID: "a3", TenantID: "a", CreatedAt: t0.Add(2 * h), CPUSeconds: 1, MemoryPeakBytes: 100, ExecCount: 1},
		// Tenant b: one sandbox in the first hour.
		{SandboxID: "b1", TenantID: "b", CreatedAt: t0.Add(59 * time.Minute), EndedAt: t0.Add(2 * h),
			CPUSeconds: 7, MemoryPeakBytes: 50, EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
	}
	if err := s.SaveUsage(ctx, rows); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(3 * h) // a3 has run an hour by then
	for _, tc := range []struct {
		name string
		f    UsageFilter
		want []TenantUsage
	}{
		{"everything", UsageFilter{Now: now}, []TenantUsage{
			{TenantID: "a", Sandboxes: 3, SandboxSeconds: 3600 + 1800 + 1800, CPUSeconds: 16, MemoryPeakBytes: 900,
				EgressBytesOut: 11, EgressBytesIn: 22, ExecCount: 34},
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"first hour, half-open", UsageFilter{From: t0, To: t0.Add(h), Now: now}, []TenantUsage{
			{TenantID: "a", Sandboxes: 2, SandboxSeconds: 3600, CPUSeconds: 15, MemoryPeakBytes: 900,
				EgressBytesOut: 11, EgressBytesIn: 22, ExecCount: 33},
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"from the start of a2", UsageFilter{TenantID: "a", From: t0.Add(10 * time.Minute), To: t0.Add(10 * h), Now: now}, []TenantUsage{
			{TenantID: "a", Sandboxes: 2, SandboxSeconds: 1800 + 3600, CPUSeconds: 6, MemoryPeakBytes: 900,
				EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 31},
		}},
		{"tenant b only", UsageFilter{TenantID: "b", Now: now}, []TenantUsage{
			{TenantID: "b", Sandboxes: 1, SandboxSeconds: 3660, CPUSeconds: 7, MemoryPeakBytes: 50,
				EgressBytesOut: 100, EgressBytesIn: 200, ExecCount: 2},
		}},
		{"nothing there", UsageFilter{From: t0.Add(5 * h), Now: now}, nil},
		{"unknown tenant", UsageFilter{TenantID: "c", Now: now}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.UsageByTenant(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCountSandboxes(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	_, _, _, sb := seed(t, s)
	for i, state := range []string{StateRunning, StateStopped, StateStopped, StateFailed} {
		sb.ID, sb.State = "sb_x"+string(rune('a'+i)), state
		if err := s.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.CountSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// seed's own sandbox is running.
	if d := cmp.Diff(map[string]int{StateRunning: 2, StateStopped: 2, StateFailed: 1}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
