package client_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest/contract"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestModelUsageTypesKeepEveryField: the server's own values for metering
// and model calls, every field set, decode into the client's types with
// no field unknown and encode back to the same JSON, nulls included: a
// field the server adds and the client lacks fails here, and a null token
// count never becomes 0.
func TestModelUsageTypesKeepEveryField(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	usd := 0.0042
	t0 := time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)
	totals := sandbox.ModelTotals{Calls: 3, UnmeteredCalls: 1, InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 300, ReasoningTokens: 50}
	cost := &sandbox.Cost{Total: 1.5, Model: 1, Compute: 0.5}
	call := sandbox.ModelCall{Time: t0, API: egress.APIOpenAIChat, Model: "gpt-test", Host: "api.openai.com", Status: 200,
		Streamed: true, DurationMS: 12.5, InputTokens: n(1000), CachedInputTokens: n(200), OutputTokens: n(300),
		ReasoningTokens: nil, CostUSD: &usd}
	for _, tc := range []struct {
		name   string
		server any
		client any
	}{
		{"metrics", sandbox.Metrics{SandboxID: "sb-1", State: "stopped", Final: true, CPUSeconds: 2, MemoryPeakBytes: 3, MemoryBytes: 4,
			WallSeconds: 5, EgressBytesOut: 6, EgressBytesIn: 7, ExecCount: 8, CreatedAt: t0, EndedAt: t0.Add(time.Minute),
			Model: totals, CostUSD: cost}, &client.SandboxMetrics{}},
		{"tenant usage", sandbox.TenantUsage{TenantID: "t-1", Sandboxes: 1, SandboxHours: 2, CPUSeconds: 3, MemoryPeakBytes: 4,
			EgressBytesOut: 5, EgressBytesIn: 6, ExecCount: 7, StorageBytes: 8, MemoryGiBSeconds: 9.5, Model: totals, CostUSD: cost},
			&client.TenantUsage{}},
		{"usage event", tasks.Event{Seq: 4, Type: tasks.EventUsage, Time: t0, SandboxID: "sb-1", Source: tasks.SourceProxy, Call: &call},
			&client.TaskEvent{}},
		{"refused call", tasks.Event{Seq: 5, Type: tasks.EventUsage, Time: t0, Source: tasks.SourceProxy,
			Call: &sandbox.ModelCall{Time: t0, Host: "api.openai.com", Status: 429, Refused: "the budget is spent"}}, &client.TaskEvent{}},
		{"budget event", tasks.Event{Seq: 6, Type: tasks.EventBudget, Time: t0, Reason: "the budget is spent"}, &client.TaskEvent{}},
		{"attempt event", tasks.Event{Seq: 7, Type: tasks.EventAttempt, Time: t0, Attempt: 2, Reason: "create sandbox: node lost"},
			&client.TaskEvent{}},
		{"attempt", tasks.Attempt{N: 1, SandboxID: "sb-1", StartedAt: t0, EndedAt: t0.Add(time.Second), Error: "lost"}, &client.TaskAttempt{}},
		{"task usage", tasks.Usage{ModelTotals: totals, Reported: tasks.ReportedUsage{InputTokens: 1, OutputTokens: 2}}, &client.TaskUsage{}},
		{"retry", tasks.Retry{Max: 2}, &client.TaskRetry{}},
		{"budget", sandbox.Budget{MaxCostUSD: &usd, MaxTokens: n(5000)}, &client.Budget{}},
		{"net model usage", egress.Event{Seq: 9, Time: t0, SandboxID: "sb-1", TenantID: "t-1", Protocol: "https", Host: "api.openai.com",
			Port: 443, Decision: egress.Allowed, Status: 200, DurationMS: 3, Kind: egress.KindModelUsage, Secret: "OPENAI_API_KEY",
			Usage: &egress.ModelUsage{API: egress.APIAnthropicMessages, Model: "claude-test", Streamed: true, InputTokens: n(1),
				CachedInputTokens: n(0), OutputTokens: n(2), ReasoningTokens: nil}}, &client.NetEvent{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.server)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(want))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.client); err != nil {
				t.Fatalf("decode %s: %v", want, err)
			}
			got, err := json.Marshal(tc.client)
			if err != nil {
				t.Fatal(err)
			}
			var w, g any
			json.Unmarshal(want, &w)
			json.Unmarshal(got, &g)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("server JSON (-) against the client's (+):\n%s", d)
			}
		})
	}
}

// TestTaskRequestBudgetAndRetry: the budget and retry a task asks for,
// as the server reads them.
func TestTaskRequestBudgetAndRetry(t *testing.T) {
	b, err := json.Marshal(client.TaskRequest{Harness: "generic", Budget: client.TokenBudget(5000), Retry: &client.TaskRetry{Max: 0}})
	if err != nil {
		t.Fatal(err)
	}
	var got tasks.Request
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Budget == nil || got.Budget.MaxTokens == nil || *got.Budget.MaxTokens != 5000 || got.Budget.MaxCostUSD != nil ||
		got.Retry == nil || got.Retry.Max != 0 {
		t.Errorf("%s read as budget %+v, retry %+v", b, got.Budget, got.Retry)
	}
	if b, _ := json.Marshal(client.CreateRequest{Budget: client.CostBudget(0.5)}); string(b) != `{"budget":{"max_cost_usd":0.5}}` {
		t.Errorf("create body %s", b)
	}
}

// TestModelUsageMatchesOpenAPI: the server's own values for metering,
// model calls, task attempts and the network log, every optional field
// set and the token counts null, are answers the OpenAPI document
// describes (the route tests meet them only as far as a test provokes).
func TestModelUsageMatchesOpenAPI(t *testing.T) {
	spec, err := os.ReadFile("../internal/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := contract.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := func(v int64) *int64 { return &v }
	usd := 0.25
	t0 := time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)
	totals := sandbox.ModelTotals{Calls: 3, UnmeteredCalls: 1, InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 300, ReasoningTokens: 50}
	cost := &sandbox.Cost{Total: 1.5, Model: 1, Compute: 0.5}
	budget := &sandbox.Budget{MaxCostUSD: &usd, MaxTokens: n(5000)}
	unread := sandbox.ModelCall{Time: t0, API: egress.APIGemini, Model: "gemini-test", Host: "generativelanguage.googleapis.com",
		Status: 500, Streamed: true, DurationMS: 2}
	read := sandbox.ModelCall{Time: t0, API: egress.APIOpenAIResponses, Host: "api.openai.com", Status: 200, DurationMS: 2,
		InputTokens: n(1), CachedInputTokens: n(0), OutputTokens: n(2), ReasoningTokens: n(1), CostUSD: &usd}
	refused := sandbox.ModelCall{Time: t0, Host: "api.openai.com", Status: 429, DurationMS: 0.1, Refused: "the budget is spent"}
	attempts := []tasks.Attempt{{N: 1, SandboxID: "sb-1", StartedAt: t0, EndedAt: t0.Add(time.Second), Error: "create sandbox: node lost"},
		{N: 2, StartedAt: t0.Add(time.Second)}}
	task := map[string]any{"id": "task-1", "state": "failed", "reason": "budget: the budget is spent", "harness": "generic",
		"prompt": "", "files": []string{}, "limits": map[string]any{}, "timeout_s": 600, "created_at": t0,
		"usage":    tasks.Usage{ModelTotals: totals, Reported: tasks.ReportedUsage{InputTokens: 1, OutputTokens: 2}},
		"cost_usd": cost, "budget": budget, "retry": tasks.Retry{Max: 2}, "attempts": attempts}
	for _, tc := range []struct {
		path string
		body any
	}{
		{"/v1/sandboxes/sb-1/metrics", sandbox.Metrics{SandboxID: "sb-1", State: "running", CreatedAt: t0, EndedAt: t0, Model: totals, CostUSD: cost}},
		{"/v1/sandboxes/sb-1/metrics", sandbox.Metrics{SandboxID: "sb-1", State: "running", CreatedAt: t0}},
		{"/v1/usage", sandbox.UsageReport{To: t0, Tenants: []sandbox.TenantUsage{{TenantID: "t-1", MemoryGiBSeconds: 1.5, Model: totals, CostUSD: cost}}}},
		{"/v1/tasks/task-1", task},
		{"/v1/tasks/task-1/events", map[string]any{"events": []tasks.Event{
			{Seq: 1, Type: tasks.EventUsage, Time: t0, SandboxID: "sb-1", Source: tasks.SourceProxy, Call: &read},
			{Seq: 2, Type: tasks.EventUsage, Time: t0, SandboxID: "sb-1", Source: tasks.SourceProxy, Call: &unread},
			{Seq: 3, Type: tasks.EventUsage, Time: t0, SandboxID: "sb-1", Source: tasks.SourceHarness, InputTokens: 5, OutputTokens: 6},
			{Seq: 4, Type: tasks.EventUsage, Time: t0, SandboxID: "sb-1", Source: tasks.SourceProxy, Call: &refused},
			{Seq: 5, Type: tasks.EventBudget, Time: t0, SandboxID: "sb-1", Reason: "the budget is spent"},
			{Seq: 6, Type: tasks.EventAttempt, Time: t0, Attempt: 2, Reason: "create sandbox: node lost"},
		}}},
		{"/v1/sandboxes/sb-1/network/log", map[string]any{"events": []egress.Event{
			{Seq: 1, Time: t0, SandboxID: "sb-1", TenantID: "t-1", Protocol: "https", Host: "api.anthropic.com", Port: 443,
				Decision: egress.Allowed, Status: 200, Kind: egress.KindModelUsage, Secret: "ANTHROPIC_API_KEY",
				Usage: &egress.ModelUsage{API: egress.APIAnthropicMessages, Model: "claude-test", InputTokens: n(3), CachedInputTokens: n(0), OutputTokens: n(4)}},
			{Seq: 2, Time: t0, SandboxID: "sb-1", TenantID: "t-1", Protocol: "https", Host: "api.openai.com", Port: 443,
				Decision: egress.Denied, Status: 429, Reason: "the budget is spent", Kind: egress.KindModelBudget, Secret: "OPENAI_API_KEY"},
		}}},
	} {
		body, err := json.Marshal(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if err := doc.Check(r, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, body); err != nil {
			t.Errorf("GET %s: %v", tc.path, err)
		}
	}
	// Not vacuous: a token count that is neither an integer nor null
	// fails.
	bad, _ := json.Marshal(map[string]any{"events": []any{map[string]any{"seq": 1, "type": "usage", "time": t0,
		"call": map[string]any{"time": t0, "host": "h", "duration_ms": 1, "input_tokens": "1", "cached_input_tokens": nil,
			"output_tokens": nil, "reasoning_tokens": nil, "cost_usd": nil}}}})
	if err := doc.Check(httptest.NewRequest(http.MethodGet, "/v1/tasks/task-1/events", nil), http.StatusOK,
		http.Header{"Content-Type": {"application/json"}}, bad); err == nil {
		t.Error("a token count as a string passed the document")
	}
}
