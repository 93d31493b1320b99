package sandbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestMetricsHistoryKeepsRecentReadings pins what the console's charts
// open with: every live reading of a running sandbox, at most one a
// second, for the last five minutes; nothing for another tenant, nothing
// once the sandbox has ended.
func TestMetricsHistoryKeepsRecentReadings(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	svc, st := stubService(t, newStub(), sandbox.Options{Now: clock})
	ctx := context.Background()
	a, b := addTenant(t, st, "a", 0, 0), addTenant(t, st, "b", 0, 0)
	// An hour to live: the readings below move the clock 400 s on, past
	// the default timeout, and the reaper (on a real ticker) must not end
	// the sandbox under the test.
	sb, err := svc.Create(ctx, a, sandbox.CreateRequest{TimeoutS: 3600})
	if err != nil {
		t.Fatal(err)
	}
	read := func(cpu float64, mem int64) {
		t.Helper()
		stubStats.Store(sb.ID, runtime.Stats{CPUSeconds: cpu, MemoryBytes: mem})
		if _, err := svc.SandboxMetrics(ctx, a, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	history := func() []sandbox.Sample {
		t.Helper()
		h, err := svc.SandboxMetricsHistory(ctx, a, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.SandboxID != sb.ID || h.IntervalS != sandbox.UsageFlushEvery.Seconds() {
			t.Errorf("history of %s: %+v", sb.ID, h)
		}
		return h.Samples
	}

	t0 := clock()
	read(1, 100)
	advance(500 * time.Millisecond)
	read(1.2, 150) // too soon after the last: dropped
	advance(2 * time.Second)
	read(2, 200)
	want := []sandbox.Sample{
		{Time: t0, CPUSeconds: 1, MemoryBytes: 100},
		{Time: t0.Add(2500 * time.Millisecond), CPUSeconds: 2, MemoryBytes: 200},
	}
	if d := cmp.Diff(want, history()); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}

	// Older than the window: gone. A reading a second for longer than the
	// window keeps one window's worth.
	for i := range 400 {
		advance(time.Second)
		read(3+float64(i), 300)
	}
	got := history()
	if n := int(sandbox.HistoryWindow/time.Second) + 1; len(got) != n {
		t.Errorf("%d samples after 400 readings a second apart, want %d (5 minutes' worth)", len(got), n)
	}
	if len(got) > 0 && (got[0].Time.Before(clock().Add(-sandbox.HistoryWindow)) || !got[len(got)-1].Time.Equal(clock())) {
		t.Errorf("samples from %v to %v, want the last %v up to %v", got[0].Time, got[len(got)-1].Time, sandbox.HistoryWindow, clock())
	}

	if _, err := svc.SandboxMetricsHistory(ctx, b, sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("b reads a's history: %v, want not found", err)
	}
	if err := svc.Delete(ctx, a, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got := history(); len(got) != 0 {
		t.Errorf("history of an ended sandbox: %d samples, want none", len(got))
	}
}
