package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tracing/tracingtest"
)

// usageEnv is a server with a price table on a fake internet whose
// allowed host serves the model mock (every API shape, with known usage)
// and, under /nousage/, one that reports no usage.
type usageEnv struct {
	n      *fakenet.Net
	s      *server
	mock   *modelmock.Mock
	silent *modelmock.Mock
}

// The mock's usage of every answer, and the price table: per call, input
// 1000 (uncached), cached 200, output 300 of which reasoning 50.
var (
	mockUsage  = modelmock.Usage{Input: 1200, CachedInput: 200, Output: 300, Reasoning: 50}
	usagePrice = `{"models": {"*": {"input": 2, "cached_input": 0.5, "output": 8}},
		"compute": {"cpu_second": 0.001, "memory_gib_second": 0.0001, "egress_gib": 1}}`
	callUSD = (1000*2 + 200*0.5 + 300*8) / 1e6
)

func startUsageEnv(t *testing.T) *usageEnv {
	n := fakenet.Start(t)
	dir := t.TempDir()
	caFile, prices := filepath.Join(dir, "upstream-ca.pem"), filepath.Join(dir, "prices.json")
	if err := os.WriteFile(caFile, n.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prices, []byte(usagePrice), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "", "--egress-dns", n.DNS, "--egress-ca-file", caFile, "--prices", prices)
	u := mockUsage
	e := &usageEnv{n: n, s: s, mock: modelmock.New(modelmock.Script{Usage: &u}), silent: modelmock.New(modelmock.Script{NoUsage: true})}
	n.Handle("/v1/", e.mock)
	n.Handle("/v1beta/", e.mock)
	n.Handle("/nousage/", e.silent)
	must[client.Secret](t)(s.admin().CreateSecret(ctx, client.SecretRequest{Name: "MODEL_KEY", Value: "sk-REAL-" + randHex(16),
		Hosts: []string{fakenet.AllowedName}}))
	return e
}

// api calls the server with the admin key, the answer checked against its
// OpenAPI document, and decodes the JSON answer into out.
func (e *usageEnv) api(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.s.url+path, body)
	req.Header.Set("Authorization", "Bearer "+e.s.adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.s.checked().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// modelCalls is a shell script calling every API shape, streaming and
// not, through the proxy with the bound key's placeholder, then one
// answer without usage; each call's status goes to codes.txt.
const modelCalls = `set -u
H=https://` + fakenet.AllowedName + `
K="$MODEL_KEY"
call() { curl -sS -o /dev/null -w '%{http_code}\n' -H 'content-type: application/json' "$@" >> codes.txt; }
call -H "Authorization: Bearer $K" -d '{"model":"gpt-test","input":"hi"}' $H/v1/responses
call -H "Authorization: Bearer $K" -d '{"model":"gpt-test","input":"hi","stream":true}' $H/v1/responses
call -H "Authorization: Bearer $K" -d '{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}' $H/v1/chat/completions
call -H "Authorization: Bearer $K" -d '{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}' $H/v1/chat/completions
call -H "x-api-key: $K" -H 'anthropic-version: 2023-06-01' -d '{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' $H/v1/messages
call -H "x-api-key: $K" -H 'anthropic-version: 2023-06-01' -d '{"model":"claude-test","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}' $H/v1/messages
call -H "x-goog-api-key: $K" -d '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}' $H/v1beta/models/gemini-test:generateContent
call -H "x-goog-api-key: $K" -d '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}' "$H/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
call -H "Authorization: Bearer $K" -d '{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}' $H/nousage/v1/chat/completions
`

// taskView is what these tests read of a task.
type taskView struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Sandbox string `json:"sandbox_id"`
	Usage   struct {
		Calls             int64 `json:"calls"`
		UnmeteredCalls    int64 `json:"unmetered_calls"`
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
		ReasoningTokens   int64 `json:"reasoning_tokens"`
	} `json:"usage"`
	Cost     *costView `json:"cost_usd"`
	Attempts []struct {
		SandboxID string `json:"sandbox_id"`
	} `json:"attempts"`
}

type costView struct {
	Total, Model, Compute float64
}

// runTask submits a generic task and waits for its end.
func (e *usageEnv) runTask(t *testing.T, req map[string]any) (taskView, []rawEvent) {
	t.Helper()
	var tk taskView
	if code := e.api(t, "POST", "/v1/tasks", req, &tk); code != http.StatusCreated {
		t.Fatalf("POST /v1/tasks: %d %+v", code, tk)
	}
	must[int64](t)(e.s.admin().FollowTask(ctx, tk.ID, 0, func(client.TaskEvent) error { return nil }))
	e.api(t, "GET", "/v1/tasks/"+tk.ID, nil, &tk)
	var page struct {
		Events []rawEvent `json:"events"`
	}
	e.api(t, "GET", "/v1/tasks/"+tk.ID+"/events?limit=1000", nil, &page)
	return tk, page.Events
}

// rawEvent is a task event as the API sends it.
type rawEvent struct {
	Type   string         `json:"type"`
	Source string         `json:"source"`
	Reason string         `json:"reason"`
	Call   map[string]any `json:"call"`
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestTaskModelUsage: a task's model calls in every API shape, streaming
// and not, are counted at the egress proxy exactly as the mock answered
// them (cached input not inside input, reasoning inside output), a call
// whose answer has no usage is counted as unmetered with null tokens, each
// call is a usage event, and the task's cost is the price table applied
// to those tokens plus its sandbox's compute.
func TestTaskModelUsage(t *testing.T) {
	e := startUsageEnv(t)
	tk, evs := e.runTask(t, map[string]any{"harness": "generic", "command": []string{"bash", "-c", modelCalls},
		"secrets": []string{"MODEL_KEY"}, "artifacts": []string{"codes.txt"}, "timeout_s": 120})
	if tk.State != "succeeded" {
		t.Fatalf("task %+v", tk)
	}
	var codes bytes.Buffer
	must[int64](t)(e.s.admin().ReadTaskArtifact(ctx, tk.ID, "codes.txt", &codes))
	if got := strings.Fields(codes.String()); len(got) != 9 || strings.Count(codes.String(), "200") != 9 {
		t.Fatalf("statuses of the calls: %q", codes.String())
	}
	// Each call as the proxy read it, in the events.
	var metered, unmetered int
	for _, ev := range evs {
		if ev.Type != "usage" || ev.Source != "proxy" {
			continue
		}
		c := ev.Call
		if c["input_tokens"] == nil {
			unmetered++
			if c["output_tokens"] != nil || c["cost_usd"] != nil {
				t.Errorf("an answer without usage recorded %v", c)
			}
			continue
		}
		metered++
		reasoning := 50.0
		if c["api"] == "anthropic.messages" {
			reasoning = -1 // not reported apart: null
		}
		if c["input_tokens"] != 1000.0 || c["cached_input_tokens"] != 200.0 || c["output_tokens"] != 300.0 ||
			(reasoning >= 0 && c["reasoning_tokens"] != reasoning) || (reasoning < 0 && c["reasoning_tokens"] != nil) {
			t.Errorf("call counted as %v, want input 1000, cached 200, output 300, reasoning 50 (null for Anthropic)", c)
		}
		if usd, _ := c["cost_usd"].(float64); !near(usd, callUSD) {
			t.Errorf("call cost %v, want %v", c["cost_usd"], callUSD)
		}
	}
	if metered != 8 || unmetered != 1 {
		t.Errorf("%d metered and %d unmetered usage events, want 8 and 1", metered, unmetered)
	}
	u := tk.Usage
	if u.Calls != 9 || u.UnmeteredCalls != 1 || u.InputTokens != 8000 || u.CachedInputTokens != 1600 ||
		u.OutputTokens != 2400 || u.ReasoningTokens != 6*50 {
		t.Errorf("task usage %+v", u)
	}
	// The mock's own record agrees: every call it answered with usage.
	answered := 0
	for _, r := range e.mock.Requests() {
		if r.Usage != nil {
			answered++
		}
	}
	if answered != 8 {
		t.Errorf("the mock answered %d calls with usage, want 8", answered)
	}
	// Cost: the model part by hand, the compute part from the sandbox's
	// own metrics by the table.
	var m struct {
		CPUSeconds     float64   `json:"cpu_seconds"`
		WallSeconds    float64   `json:"wall_seconds"`
		EgressBytesOut int64     `json:"egress_bytes_out"`
		Cost           *costView `json:"cost_usd"`
	}
	e.api(t, "GET", "/v1/sandboxes/"+tk.Sandbox+"/metrics", nil, &m)
	var sb struct {
		Limits struct {
			MemoryMB int64 `json:"memory_mb"`
		} `json:"limits"`
	}
	e.api(t, "GET", "/v1/sandboxes/"+tk.Sandbox, nil, &sb)
	compute := m.CPUSeconds*0.001 + float64(sb.Limits.MemoryMB)/1024*m.WallSeconds*0.0001 + float64(m.EgressBytesOut)/(1<<30)*1
	if tk.Cost == nil || !near(tk.Cost.Model, 8*callUSD) || !near(tk.Cost.Compute, compute) ||
		!near(tk.Cost.Total, 8*callUSD+compute) || compute <= 0 {
		t.Errorf("task cost %+v, want model %v + compute %v (metrics %+v, %d MiB)", tk.Cost, 8*callUSD, compute, m, sb.Limits.MemoryMB)
	}
	if len(tk.Attempts) != 1 || tk.Attempts[0].SandboxID != tk.Sandbox {
		t.Errorf("attempts %+v", tk.Attempts)
	}
	// The harness table: every harness, generic's template (base) built.
	var hs struct {
		Harnesses []struct {
			Name    string `json:"name"`
			Built   bool   `json:"built"`
			Version string `json:"version"`
		} `json:"harnesses"`
	}
	e.api(t, "GET", "/v1/harnesses", nil, &hs)
	if len(hs.Harnesses) != 8 || hs.Harnesses[0].Name != "generic" || !hs.Harnesses[0].Built || hs.Harnesses[1].Version == "" {
		t.Errorf("harnesses %+v", hs)
	}
	// The tenant's usage report carries the same tokens and cost.
	var rep struct {
		Tenants []struct {
			Model struct {
				Calls int64 `json:"calls"`
			} `json:"model"`
			Cost *costView `json:"cost_usd"`
		} `json:"tenants"`
	}
	e.api(t, "GET", "/v1/usage", nil, &rep)
	if len(rep.Tenants) == 0 || rep.Tenants[0].Model.Calls < 9 || rep.Tenants[0].Cost == nil || rep.Tenants[0].Cost.Model < 8*callUSD-1e-9 {
		t.Errorf("usage report %+v", rep)
	}
}

// TestTaskBudget: a budget of two calls' tokens lets two through; the
// third is answered 429 by the proxy with a body saying so, never reaches
// the mock, and the task ends failed with reason budget and a budget
// event.
func TestTaskBudget(t *testing.T) {
	e := startUsageEnv(t)
	script := `H=https://` + fakenet.AllowedName + `
for i in 1 2 3; do
  curl -sS -o out$i.json -w '%{http_code}\n' -H "Authorization: Bearer $MODEL_KEY" -H 'content-type: application/json' \
    -d '{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}' $H/v1/chat/completions >> codes.txt
done
sleep 30`
	before := len(e.mock.Requests())
	tk, evs := e.runTask(t, map[string]any{"harness": "generic", "command": []string{"bash", "-c", script},
		"secrets": []string{"MODEL_KEY"}, "budget": map[string]any{"max_tokens": 3000}, "timeout_s": 120})
	if tk.State != "failed" || !strings.HasPrefix(tk.Reason, "budget") {
		t.Fatalf("task %+v, want failed with reason budget", tk)
	}
	if got := len(e.mock.Requests()) - before; got != 2 {
		t.Errorf("the mock got %d calls, want 2", got)
	}
	var budget, refused bool
	for _, ev := range evs {
		budget = budget || ev.Type == "budget" && strings.Contains(ev.Reason, "max_tokens 3000")
		refused = refused || ev.Type == "usage" && ev.Call["refused"] != nil
	}
	if !budget || !refused {
		t.Errorf("events lack the budget event (%v) or the refused call (%v): %s", budget, refused, mustJSON(t, evs))
	}
	if tk.Usage.Calls != 2 || tk.Usage.InputTokens != 2000 {
		t.Errorf("usage %+v, want the two calls that went through", tk.Usage)
	}
	// A sandbox's own budget, through the API: the third call's answer.
	var sb struct {
		ID string `json:"id"`
	}
	if code := e.api(t, "POST", "/v1/sandboxes", map[string]any{"secrets": []string{"MODEL_KEY"},
		"budget": map[string]any{"max_cost_usd": 2 * callUSD}}, &sb); code != http.StatusCreated {
		t.Fatalf("create with a budget: %d", code)
	}
	c := e.s.admin()
	defer c.DeleteSandbox(ctx, sb.ID)
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: strings.TrimSuffix(script, "sleep 30") + "cat codes.txt out3.json",
		Timeout: time.Minute}))
	if !strings.HasPrefix(res.Stdout, "200\n200\n429\n") || !strings.Contains(res.Stdout, "budget") {
		t.Errorf("three calls on a sandbox with a two-call cost budget:\n%s", res.Stdout)
	}
	for _, bad := range []map[string]any{{"max_tokens": 0}, {}, {"max_cost_usd": -1}} {
		var out map[string]any
		if code := e.api(t, "POST", "/v1/sandboxes", map[string]any{"budget": bad}, &out); code != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(out), "budget") {
			t.Errorf("budget %v: %d %v, want 400 naming budget", bad, code, out)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTaskTrace: an ended task is exported as one trace: the task's span,
// a child per model call (its tokens and cost) and per tool call and
// command of the harness.
func TestTaskTrace(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "airlock-e2e")
	e := startUsageEnv(t)
	script := `curl -sS -o /dev/null -H "Authorization: Bearer $MODEL_KEY" -H 'content-type: application/json' \
  -d '{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}' https://` + fakenet.AllowedName + `/v1/chat/completions
echo '{"type":"tool_call","id":"c1","name":"shell","input":{"command":"ls"}}'
ls >/dev/null
echo '{"type":"tool_result","id":"c1","name":"shell","output":"ok"}'
echo '{"type":"command","argv":["ls"],"exit_code":0}'`
	tk, _ := e.runTask(t, map[string]any{"harness": "generic", "command": []string{"bash", "-c", script},
		"secrets": []string{"MODEL_KEY"}, "timeout_s": 120})
	if tk.State != "succeeded" {
		t.Fatalf("task %+v", tk)
	}
	e.s.stop() // a graceful stop sends what is buffered
	var root *tracingtest.Span
	kids := map[string]tracingtest.Span{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, sp := range rcv.Spans() {
			if sp.Name == "task" && sp.Attrs["airlock.task_id"] == tk.ID {
				root = &sp
			}
		}
		if root == nil {
			continue
		}
		for _, sp := range rcv.Spans() {
			if bytes.Equal(sp.TraceID, root.TraceID) && sp.Name != "task" {
				kids[sp.Name] = sp
			}
		}
		if len(kids) >= 3 {
			break
		}
	}
	if root == nil {
		t.Fatalf("no task span among %+v", rcv.Spans())
	}
	call, tool, cmd := kids["model.call"], kids["tool.shell"], kids["command"]
	if call.Attrs["airlock.input_tokens"] != "1000" || call.Attrs["airlock.output_tokens"] != "300" || call.Attrs["airlock.cost_usd"] == "" {
		t.Errorf("model call span %+v", call)
	}
	if tool.Name == "" || cmd.Attrs["airlock.command"] != "ls" || cmd.Attrs["airlock.exit_code"] != "0" {
		t.Errorf("tool %+v, command %+v", tool, cmd)
	}
	if root.Attrs["airlock.model_calls"] != "1" || root.Attrs["airlock.harness"] != "generic" {
		t.Errorf("task span %+v", *root)
	}
}
