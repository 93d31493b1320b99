package sandbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// stubStats holds what each stub sandbox's cgroup would say (sandbox id
// -> runtime.Stats); none: zeros.
var stubStats sync.Map

// Stats lets the service meter stub sandboxes, which it does on every end.
func (s stubSandbox) Stats(context.Context) (runtime.Stats, error) {
	if st, ok := stubStats.Load(s.id); ok {
		return st.(runtime.Stats), nil
	}
	return runtime.Stats{}, nil
}

// counter reads a counter or a histogram's count from a registry.
func counter(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		var sum float64
		for _, x := range f.GetMetric() {
			sum += value(x)
		}
		return sum
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func value(x *dto.Metric) float64 {
	switch {
	case x.GetCounter() != nil:
		return x.GetCounter().GetValue()
	case x.GetHistogram() != nil:
		return float64(x.GetHistogram().GetSampleCount())
	}
	return x.GetGauge().GetValue()
}

// TestUsageScopes: a tenant key sees its own tenant only (another one is
// "not found"), an admin key every tenant or the one it names; the window
// selects sandboxes by creation time; a bad window changes nothing.
func TestUsageScopes(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{Now: clock})
	ctx := context.Background()
	a, b := addTenant(t, st, "a", 0, 0), addTenant(t, st, "b", 0, 0)
	admin := addTenant(t, st, "root", 0, 0)
	admin.Admin = true
	start := clock()

	sa, err := svc.Create(ctx, a, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stubStats.Store(sa.ID, runtime.Stats{CPUSeconds: 4, MemoryPeakBytes: 300})
	advance(30 * time.Minute)
	if err := svc.Delete(ctx, a, sa.ID); err != nil {
		t.Fatal(err)
	}
	advance(30 * time.Minute)
	// Past the 6 minutes below: expired, it would end at its deadline.
	sb, err := svc.Create(ctx, b, sandbox.CreateRequest{TimeoutS: 3600})
	if err != nil {
		t.Fatal(err)
	}
	stubStats.Store(sb.ID, runtime.Stats{CPUSeconds: 1, MemoryBytes: 50})
	advance(6 * time.Minute) // b's runs on: 0.1 h so far

	// What each tenant keeps now (its audit logs) is in its line, whatever
	// the window; reading a log writes out what the audit log holds.
	svc.AuditLog(ctx, a, sa.ID, store.AuditFilter{Limit: 1}, func(audit.Event) error { return nil })
	kept := func(c sandbox.Caller) int64 { n, _ := st.StorageBytes(ctx, c.TenantID); return n }
	// Memory GiB-seconds: the default limit (512 MiB) over each one's life.
	lineA := sandbox.TenantUsage{TenantID: a.TenantID, Sandboxes: 1, SandboxHours: 0.5, CPUSeconds: 4, MemoryPeakBytes: 300, StorageBytes: kept(a),
		MemoryGiBSeconds: 0.5 * 1800}
	lineB := sandbox.TenantUsage{TenantID: b.TenantID, Sandboxes: 1, SandboxHours: 0.1, CPUSeconds: 1, MemoryPeakBytes: 50, StorageBytes: kept(b),
		MemoryGiBSeconds: 0.5 * 360}
	zero := func(c sandbox.Caller) sandbox.TenantUsage {
		return sandbox.TenantUsage{TenantID: c.TenantID, StorageBytes: kept(c)}
	}
	approx := cmp.Comparer(func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 })
	for _, tc := range []struct {
		name string
		c    sandbox.Caller
		q    sandbox.UsageQuery
		want []sandbox.TenantUsage
		err  error
	}{
		{"tenant a", a, sandbox.UsageQuery{}, []sandbox.TenantUsage{lineA}, nil},
		{"tenant a names itself", a, sandbox.UsageQuery{TenantID: a.TenantID}, []sandbox.TenantUsage{lineA}, nil},
		{"tenant a names b", a, sandbox.UsageQuery{TenantID: b.TenantID}, nil, sandbox.ErrNotFound},
		{"tenant b, running", b, sandbox.UsageQuery{}, []sandbox.TenantUsage{lineB}, nil},
		{"admin, all", admin, sandbox.UsageQuery{}, []sandbox.TenantUsage{lineA, lineB}, nil},
		{"admin names b", admin, sandbox.UsageQuery{TenantID: b.TenantID}, []sandbox.TenantUsage{lineB}, nil},
		{"admin names itself", admin, sandbox.UsageQuery{TenantID: admin.TenantID}, []sandbox.TenantUsage{zero(admin)}, nil},
		{"admin names nobody", admin, sandbox.UsageQuery{TenantID: "t-nobody"}, nil, sandbox.ErrNotFound},
		{"first half hour", admin, sandbox.UsageQuery{From: start, To: start.Add(30 * time.Minute)}, []sandbox.TenantUsage{lineA}, nil},
		{"after a", admin, sandbox.UsageQuery{From: start.Add(time.Second)}, []sandbox.TenantUsage{lineB}, nil},
		{"tenant a, later", a, sandbox.UsageQuery{From: start.Add(time.Hour)}, []sandbox.TenantUsage{zero(a)}, nil},
		{"empty window", admin, sandbox.UsageQuery{From: start, To: start}, nil, sandbox.ErrInvalid},
		{"a token", sandbox.Caller{TenantID: b.TenantID, SandboxID: sb.ID}, sandbox.UsageQuery{}, nil, sandbox.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := svc.Usage(ctx, tc.c, tc.q)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if d := cmp.Diff(tc.want, rep.Tenants, approx); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// Another tenant's sandbox has no metrics for a.
	if _, err := svc.SandboxMetrics(ctx, a, sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("a reads b's metrics: %v", err)
	}
}

// TestCreateFailureMetered: a create the runtime refuses counts as a
// create and a failure, and the failed sandbox has final (empty) usage.
func TestCreateFailureMetered(t *testing.T) {
	rt := newStub()
	m := metrics.New(nil)
	svc, st := stubService(t, rt, sandbox.Options{Metrics: m})
	ctx := context.Background()
	c := addTenant(t, st, "a", 0, 0)
	ok, err := svc.Create(ctx, c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rt.fail = errors.New("no uid range left")
	if _, err := svc.Create(ctx, c, sandbox.CreateRequest{}); err == nil {
		t.Fatal("create succeeded")
	}
	// Refused before admission: not a create the service tried.
	if _, err := svc.Create(ctx, c, sandbox.CreateRequest{CPUs: -1}); err == nil {
		t.Fatal("create with -1 cpus succeeded")
	}
	got := map[string]float64{}
	for _, n := range []string{"airlock_sandbox_creates_total", "airlock_sandbox_create_failures_total", "airlock_sandbox_create_duration_seconds"} {
		got[n] = counter(t, m, n)
	}
	if d := cmp.Diff(map[string]float64{"airlock_sandbox_creates_total": 2, "airlock_sandbox_create_failures_total": 1,
		"airlock_sandbox_create_duration_seconds": 1}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	l, err := st.ListSandboxes(ctx, sandboxrec.Filter{TenantID: c.TenantID, State: sandboxrec.Failed})
	if err != nil || len(l) != 1 {
		t.Fatalf("failed sandboxes: %v %v", l, err)
	}
	if mt, err := svc.SandboxMetrics(ctx, c, l[0].ID); err != nil || !mt.Final || mt.State != sandboxrec.Failed {
		t.Errorf("metrics of the failed create: %+v %v", mt, err)
	}
	rep, err := svc.Usage(ctx, c, sandbox.UsageQuery{})
	if err != nil || len(rep.Tenants) != 1 || rep.Tenants[0].Sandboxes != 2 {
		t.Errorf("usage: %+v %v, want both sandboxes", rep, err)
	}
	if err := svc.Delete(ctx, c, ok.ID); err != nil {
		t.Fatal(err)
	}
}
