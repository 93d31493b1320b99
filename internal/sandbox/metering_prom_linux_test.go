package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// promEnv is a daemon in miniature: a Service with metrics and the egress
// proxy, served by the API on a loopback port, and an admin key.
type promEnv struct {
	t     *testing.T
	url   string
	admin string
}

func (e *promEnv) call(method, path, body string, want int, out any) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.admin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// scrape reads /metrics and returns every series as "name{labels}" ->
// value (a histogram's sample count).
func (e *promEnv) scrape() map[string]float64 {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "airlock_") {
			continue
		}
		for _, m := range f.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += fmt.Sprintf("{%s=%s}", l.GetName(), l.GetValue())
			}
			out[key] = value(m)
		}
	}
	return out
}

// TestPrometheusCounters: /metrics, parsed as Prometheus parses it, moves
// as it should across a create, an exec that goes through the proxy, and
// a delete, all through the API.
func TestPrometheusCounters(t *testing.T) {
	ctx := context.Background()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer up.Close()
	target := strings.TrimPrefix(up.URL, "http://")

	m := metrics.New(nil)
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{Metrics: m, Egress: &egress.Config{AllowPrivate: loopbackOpened}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := tenant(t, 0, 0)
	key, hash := api.NewKey()
	if err := shared.CreateKey(ctx, tenancy.Key{ID: "k-prom-" + c.TenantID, TenantID: c.TenantID, Name: "admin", Hash: hash, Admin: true}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, shared, api.Options{Metrics: m}))
	defer srv.Close()
	e := &promEnv{t: t, url: srv.URL, admin: key}

	before := e.scrape()
	var sb struct{ ID string }
	e.call("POST", "/v1/sandboxes", `{"network":{"mode":"allowlist","allow":["`+target+`"]}}`, 201, &sb)
	created := e.scrape()
	var res sandbox.ExecResult
	e.call("POST", "/v1/sandboxes/"+sb.ID+"/exec", `{"command":"curl -sS --noproxy '' -x http://127.0.0.1:3128 http://`+target+`/"}`, 200, &res)
	if res.Stdout != "hello" {
		t.Fatalf("curl through the proxy: %+v", res)
	}
	// The request's event is logged when the proxy is done with it.
	var mt sandbox.Metrics
	for deadline := time.Now().Add(5 * time.Second); mt.EgressBytesIn == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		e.call("GET", "/v1/sandboxes/"+sb.ID+"/metrics", "", 200, &mt)
	}
	execd := e.scrape()
	e.call("DELETE", "/v1/sandboxes/"+sb.ID, "", 204, nil)
	deleted := e.scrape()

	delta := func(from, to map[string]float64, names ...string) map[string]float64 {
		d := map[string]float64{}
		for _, n := range names {
			d[n] = to[n] - from[n]
		}
		return d
	}
	names := []string{
		"airlock_sandbox_creates_total", "airlock_sandbox_create_failures_total",
		"airlock_sandbox_create_duration_seconds", "airlock_exec_duration_seconds",
		"airlock_sandboxes{state=running}", "airlock_sandboxes{state=stopped}",
		"airlock_egress_decisions_total{decision=allowed}", "airlock_egress_decisions_total{decision=denied}",
	}
	for _, step := range []struct {
		name     string
		from, to map[string]float64
		want     []float64 // in the order of names
	}{
		{"create", before, created, []float64{1, 0, 1, 0, 1, 0, 0, 0}},
		{"exec", created, execd, []float64{0, 0, 0, 1, 0, 0, 1, 0}},
		{"delete", execd, deleted, []float64{0, 0, 0, 0, -1, 1, 0, 0}},
	} {
		want := map[string]float64{}
		for i, n := range names {
			want[n] = step.want[i]
		}
		if d := cmp.Diff(want, delta(step.from, step.to, names...)); d != "" {
			t.Errorf("%s moved (-want +got):\n%s", step.name, d)
		}
	}
	// Bytes through the proxy, as the sandbox's metrics count them.
	if out, in := execd["airlock_egress_bytes_total{direction=out}"]-created["airlock_egress_bytes_total{direction=out}"],
		execd["airlock_egress_bytes_total{direction=in}"]-created["airlock_egress_bytes_total{direction=in}"]; out != float64(mt.EgressBytesOut) || in != float64(mt.EgressBytesIn) || in == 0 {
		t.Errorf("egress bytes moved out %v in %v; the sandbox's metrics say %d and %d", out, in, mt.EgressBytesOut, mt.EgressBytesIn)
	}
	// Every step writes audit events (created, exec, stopped...).
	for _, step := range []struct {
		name     string
		from, to map[string]float64
	}{{"create", before, created}, {"exec", created, execd}, {"delete", execd, deleted}} {
		if d := step.to["airlock_audit_events_total"] - step.from["airlock_audit_events_total"]; d < 1 {
			t.Errorf("%s: %v audit events counted", step.name, d)
		}
	}
	// The usage route over the real service.
	var rep sandbox.UsageReport
	e.call("GET", "/v1/usage?tenant="+c.TenantID, "", 200, &rep)
	if len(rep.Tenants) != 1 || rep.Tenants[0].Sandboxes != 1 || rep.Tenants[0].ExecCount != 1 ||
		rep.Tenants[0].EgressBytesIn != mt.EgressBytesIn {
		t.Errorf("usage: %+v", rep)
	}
}
