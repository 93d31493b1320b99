package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func TestSandboxMetricsRoute(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	path := "/v1/sandboxes/" + id + "/metrics"
	var raw map[string]any
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &raw)
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"cpu_seconds", "created_at", "egress_bytes_in", "egress_bytes_out", "exec_count",
		"final", "memory_bytes", "memory_peak_bytes", "model", "sandbox_id", "state", "wall_seconds"}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("metrics keys (-want +got):\n%s", d)
	}
	// The sandbox's own token may read them; another tenant may not.
	tok := e.token(e.alice, id, 60)
	e.must(call{method: "GET", path: path, cred: tok}, 200, nil)
	if code, _ := e.must(call{method: "GET", path: path, cred: e.bob}, 404, nil).errCode(); code != "not_found" {
		t.Errorf("bob reading alice's metrics: %s", code)
	}
	if code, _ := e.must(call{method: "GET", path: path + "?x=1", cred: e.alice}, 400, nil).errCode(); code != "invalid_argument" {
		t.Errorf("unknown parameter: %s", code)
	}
}

// TestSandboxMetricsHistoryRoute: a sandbox's recent readings, as the
// console's charts open with them; the sandbox's token may read them,
// another tenant gets 404, an unknown parameter 400.
func TestSandboxMetricsHistoryRoute(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	path := "/v1/sandboxes/" + id + "/metrics/history"
	var got sandbox.MetricsHistory
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &got)
	if got.SandboxID != id || got.IntervalS <= 0 || len(got.Samples) != 2 || got.Samples[1].CPUSeconds != 1.5 {
		t.Errorf("history: %+v, want the fake's two samples of %s", got, id)
	}
	var raw map[string]any
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &raw)
	sample, _ := raw["samples"].([]any)[0].(map[string]any)
	var keys []string
	for k := range sample {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if d := cmp.Diff([]string{"cpu_seconds", "memory_bytes", "time"}, keys); d != "" {
		t.Errorf("sample keys (-want +got):\n%s", d)
	}
	e.must(call{method: "GET", path: path, cred: e.token(e.alice, id, 60)}, 200, nil)
	if code, _ := e.must(call{method: "GET", path: path, cred: e.bob}, 404, nil).errCode(); code != "not_found" {
		t.Errorf("bob reading alice's history: %s", code)
	}
	e.must(call{method: "GET", path: path + "?window=1h", cred: e.alice}, 400, nil)
}

// TestSandboxesMetricsRoute: several sandboxes' metrics in one call; ids
// the caller does not own are left out, as if they did not exist.
func TestSandboxesMetricsRoute(t *testing.T) {
	e := newEnv(t)
	a1, a2, b1 := e.sandbox(e.alice), e.sandbox(e.alice), e.sandbox(e.bob)
	var got struct{ Metrics []sandbox.Metrics }
	e.must(call{method: "GET", path: "/v1/sandboxes/metrics?ids=" + strings.Join([]string{a1, b1, "sb-nope", a2, a1}, ","), cred: e.alice}, 200, &got)
	var ids []string
	for _, m := range got.Metrics {
		ids = append(ids, m.SandboxID)
	}
	if want := []string{a1, a2}; !slices.Equal(ids, want) {
		t.Errorf("metrics of %v, want %v", ids, want)
	}
	many := strings.TrimSuffix(strings.Repeat(a1+",", MaxMetricsIDs+1), ",")
	for _, tc := range []struct{ path, want string }{
		{"/v1/sandboxes/metrics", "is required"},
		{"/v1/sandboxes/metrics?ids=", "is required"},
		{"/v1/sandboxes/metrics?ids=" + a1 + ",,", "empty id"},
		{"/v1/sandboxes/metrics?ids=" + many, "at most 100"},
		{"/v1/sandboxes/metrics?ids=" + a1 + "&ids=" + a2, "2 times"},
		{"/v1/sandboxes/metrics?id=" + a1, "unknown query parameter"},
	} {
		if a := e.must(call{method: "GET", path: tc.path, cred: e.alice}, 400, nil); !strings.Contains(string(a.body), tc.want) {
			t.Errorf("GET %s: %s, want it to say %q", tc.path, a.body, tc.want)
		}
	}
	// A sandbox token reaches one sandbox's routes only.
	e.must(call{method: "GET", path: "/v1/sandboxes/metrics?ids=" + a1, cred: e.token(e.alice, a1, 60)}, 403, nil)
}

func TestUsageRoute(t *testing.T) {
	e := newEnv(t)
	from, to := "2026-01-01T00:00:00Z", "2026-02-01T00:00:00+01:00"
	var rep sandbox.UsageReport
	e.must(call{method: "GET", path: "/v1/usage?from=" + from + "&to=" + to + "&tenant=ten_bob", cred: e.admin}, 200, &rep)
	wantQ := sandbox.UsageQuery{From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		To: time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), TenantID: "ten_bob"}
	if d := cmp.Diff(wantQ, e.m.lastUsage, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("query (-want +got):\n%s", d)
	}
	if len(rep.Tenants) != 1 || rep.Tenants[0].TenantID != "ten_bob" || rep.Tenants[0].Sandboxes != 2 {
		t.Errorf("report %+v", rep)
	}
	// An escaped offset reads the same.
	e.must(call{method: "GET", path: "/v1/usage?to=2026-02-01T00:00:00%2B01:00", cred: e.alice}, 200, &rep)
	if !e.m.lastUsage.To.Equal(wantQ.To) {
		t.Errorf("escaped to=%v, want %v", e.m.lastUsage.To, wantQ.To)
	}
	// Every parameter is optional.
	e.must(call{method: "GET", path: "/v1/usage", cred: e.alice}, 200, &rep)
	if (e.m.lastUsage != sandbox.UsageQuery{}) {
		t.Errorf("query without parameters: %+v", e.m.lastUsage)
	}

	id := e.sandbox(e.alice)
	tok := e.token(e.alice, id, 60)
	for _, tc := range []struct {
		name, query, cred string
		status            int
		code              string
	}{
		{"not a time", "?from=yesterday", e.alice, 400, "invalid_argument"},
		{"no zone", "?to=2026-01-01T00:00:00", e.alice, 400, "invalid_argument"},
		{"empty window", "?from=" + from + "&to=" + from, e.alice, 400, "invalid_argument"},
		{"backwards", "?from=" + to + "&to=" + from, e.alice, 400, "invalid_argument"},
		{"unknown parameter", "?tenants=x", e.alice, 400, "invalid_argument"},
		{"twice", "?from=" + from + "&from=" + from, e.alice, 400, "invalid_argument"},
		{"a sandbox token", "", tok, 403, "forbidden"},
		{"no credential", "", "", 401, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.must(call{method: "GET", path: "/v1/usage" + tc.query, cred: tc.cred}, tc.status, nil)
			if code, msg := a.errCode(); code != tc.code {
				t.Errorf("code %q (%s), want %q", code, msg, tc.code)
			}
		})
	}
}

// scrape reads /metrics with cred and parses the text format.
func scrape(t *testing.T, e *env, cred string) map[string][]float64 {
	t.Helper()
	a := e.must(call{method: "GET", path: "/metrics", cred: cred}, 200, nil)
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(a.body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, a.body)
	}
	out := map[string][]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[name] = append(out[name], m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				out[name] = append(out[name], m.GetGauge().GetValue())
			case m.GetHistogram() != nil:
				out[name] = append(out[name], float64(m.GetHistogram().GetSampleCount()))
			}
		}
	}
	return out
}

func TestPrometheusRoute(t *testing.T) {
	e := newEnv(t)
	if code, _ := e.must(call{method: "GET", path: "/metrics", cred: e.admin}, 404, nil).errCode(); code != "not_found" {
		t.Errorf("without metrics: %s", code)
	}
	m := metrics.New(slog.New(slog.DiscardHandler))
	m.CountStates(func(context.Context) (map[string]int, error) { return map[string]int{"running": 2, "stopped": 5}, nil })
	e.srv = newServer(t, New(e.m, e.st, Options{Now: e.clock, Logger: slog.New(slog.DiscardHandler), Metrics: m}))

	e.must(call{method: "GET", path: "/metrics"}, 401, nil)
	if code, _ := e.must(call{method: "GET", path: "/metrics", cred: e.alice}, 403, nil).errCode(); code != "forbidden" {
		t.Errorf("a tenant key: %s", code)
	}
	before := scrape(t, e, e.admin)
	m.CreateDone(20*time.Millisecond, nil)
	m.CreateDone(time.Second, errors.New("boot failed"))
	m.ExecDone(time.Millisecond)
	m.EgressDecision("denied")
	m.EgressBytes(100, 2000)
	m.AuditEvent()
	m.AuditEvent()
	after := scrape(t, e, e.admin)
	moved := map[string][]float64{}
	for _, name := range []string{"airlock_sandbox_creates_total", "airlock_sandbox_create_failures_total",
		"airlock_sandbox_create_duration_seconds", "airlock_exec_duration_seconds", "airlock_audit_events_total"} {
		moved[name] = []float64{after[name][0] - before[name][0]}
	}
	want := map[string][]float64{
		"airlock_sandbox_creates_total": {2}, "airlock_sandbox_create_failures_total": {1},
		"airlock_sandbox_create_duration_seconds": {1}, "airlock_exec_duration_seconds": {1},
		"airlock_audit_events_total": {2},
	}
	if d := cmp.Diff(want, moved); d != "" {
		t.Errorf("moved (-want +got):\n%s", d)
	}
	// Labelled series: both decisions and directions exist from the start.
	for name, w := range map[string][]float64{
		"airlock_egress_decisions_total": {0, 1}, // allowed, denied
		"airlock_egress_bytes_total":     {100, 2000},
		"airlock_sandboxes":              {2, 5},
	} {
		got := slices.Clone(after[name])
		slices.Sort(got)
		if d := cmp.Diff(w, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	// The Go and process collectors are registered too.
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if len(after[name]) == 0 {
			t.Errorf("%s missing", name)
		}
	}
}

// FuzzUsageQuery: any query string is refused with a 400 or read into a
// window that is not empty.
func FuzzUsageQuery(f *testing.F) {
	f.Add("from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00%2B01:00&tenant=t-a")
	f.Add("to=2026-02-01T00:00:00 01:00")
	f.Add("from=2026-01-01&from=x")
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/v1/usage", nil)
		r.URL.RawQuery = raw
		q, err := usageQuery(r)
		if err != nil {
			if status, code, _ := statusOf(err); status != 400 || code != "invalid_argument" {
				t.Fatalf("%q: %d %s", raw, status, code)
			}
			return
		}
		if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
			t.Fatalf("%q: accepted window [%v, %v)", raw, q.From, q.To)
		}
	})
}
