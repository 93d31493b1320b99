package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

// TestMeteringCalls: the requests the client sends and how it reads the
// answers (the server side is tested in internal/api and internal/sandbox).
func TestMeteringCalls(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/sandboxes/sb-1/metrics":
			io.WriteString(w, `{"sandbox_id":"sb-1","state":"stopped","final":true,"cpu_seconds":2.5,
				"memory_peak_bytes":1048576,"wall_seconds":61,"egress_bytes_out":10,"egress_bytes_in":20,
				"exec_count":3,"created_at":"2026-01-02T03:04:05Z","ended_at":"2026-01-02T03:05:06Z",
				"model":{"calls":2,"unmetered_calls":1,"input_tokens":1000,"cached_input_tokens":200,"output_tokens":300,"reasoning_tokens":50},
				"cost_usd":{"total":0.75,"model":0.5,"compute":0.25}}`)
		case "/v1/usage":
			io.WriteString(w, `{"to":"2026-02-01T00:00:00Z","tenants":[{"tenant_id":"t-a","sandboxes":2,"sandbox_hours":1.5,
				"cpu_seconds":3,"memory_peak_bytes":7,"egress_bytes_out":8,"egress_bytes_in":9,"exec_count":4,
				"memory_gib_seconds":2.5,"model":{"calls":1,"unmetered_calls":0,"input_tokens":10,"cached_input_tokens":0,
				"output_tokens":5,"reasoning_tokens":0}}]}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"not_found","message":"sandbox sb-2 not found"}}`)
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL, "alk_test")
	ctx := context.Background()

	m, err := c.SandboxMetrics(ctx, "sb-1")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := client.SandboxMetrics{SandboxID: "sb-1", State: "stopped", Final: true, CPUSeconds: 2.5, MemoryPeakBytes: 1 << 20,
		WallSeconds: 61, EgressBytesOut: 10, EgressBytesIn: 20, ExecCount: 3, CreatedAt: t0, EndedAt: t0.Add(61 * time.Second),
		Model:   client.ModelTotals{Calls: 2, UnmeteredCalls: 1, InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 300, ReasoningTokens: 50},
		CostUSD: &client.Cost{Total: 0.75, Model: 0.5, Compute: 0.25}}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	if _, err := c.SandboxMetrics(ctx, "sb-2"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("metrics of a missing sandbox: %v", err)
	}

	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))
	rep, err := c.Usage(ctx, from, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), "t-a")
	if err != nil {
		t.Fatal(err)
	}
	wantRep := client.UsageReport{To: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Tenants: []client.TenantUsage{{
		TenantID: "t-a", Sandboxes: 2, SandboxHours: 1.5, CPUSeconds: 3, MemoryPeakBytes: 7, EgressBytesOut: 8, EgressBytesIn: 9, ExecCount: 4,
		MemoryGiBSeconds: 2.5, Model: client.ModelTotals{Calls: 1, InputTokens: 10, OutputTokens: 5}}}}
	if d := cmp.Diff(wantRep, rep); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	if _, err := c.Usage(ctx, time.Time{}, time.Time{}, ""); err != nil {
		t.Fatal(err)
	}
	wantReqs := []string{
		"GET /v1/sandboxes/sb-1/metrics",
		"GET /v1/sandboxes/sb-2/metrics",
		"GET /v1/usage?from=2026-01-01T00%3A00%3A00%2B01%3A00&tenant=t-a&to=2026-02-01T00%3A00%3A00Z",
		"GET /v1/usage",
	}
	if d := cmp.Diff(wantReqs, got); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}
