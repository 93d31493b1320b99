package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/pricing"
)

// The model the bench's mock plays, the tokens each of its answers
// reports (OpenAI Chat's usage: prompt_tokens counts the cached ones,
// completion_tokens the reasoning ones) and the price table the server
// gets for it (USD per million tokens).
const (
	benchModel           = "bench-mock-1"
	mockPromptTokens     = 1200
	mockCachedTokens     = 200
	mockCompletionTokens = 300
	mockReasoningTokens  = 100
	benchPrices          = `{"models": {"` + benchModel + `": {"input": 2, "cached_input": 0.5, "output": 8}}}`
)

// benchTasks submits n generic tasks at once through the HTTP API of an
// in-process daemon whose egress proxy reaches a fake internet: each task
// calls a model mock there once, with a key bound to the mock's host
// (the sandbox holds a placeholder; the proxy puts the real key in), and
// keeps the answer as its artifact. It prints the tasks' wall times and
// cost, and fails unless every task succeeded with the usage, cost and
// artifact the mock's answer implies and no sandbox is left running.
func benchTasks(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench tasks", flag.ContinueOnError)
	n := fs.Int("n", 50, "tasks submitted at once")
	pool := fs.Int("pool", 2, "the daemon's warm pool size (serve's default)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock bench tasks [-n 50] [-pool 2]\n\nn generic tasks at once, each one model call through the egress proxy\nwith a bound key to a mock on a fake internet (needs root and ip).")
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *pool < 0 {
		return badInput("bench tasks", "-n must be at least 1 and -pool at least 0")
	}
	e, err := startTasksEnv(ctx, *n, *pool)
	if err != nil {
		return err
	}
	defer e.close(ctx)
	fmt.Printf("tasks: %d generic tasks at once through the HTTP API (in-process daemon, warm pool %d), each one model call with a bound key through the egress proxy\n", *n, *pool)
	return e.run(ctx)
}

// tasksEnv is the bench's world: the fake internet with the model mock,
// the daemon, and a tenant whose quota runs every task at once.
type tasksEnv struct {
	n      int
	net    *fakenet.Net
	mock   *modelMock
	prices *pricing.Table
	b      *benchServer
	c      *client.Client // the tenant's
	key    string         // the tenant's API key
	ids    []string
}

func startTasksEnv(ctx context.Context, n, pool int) (_ *tasksEnv, err error) {
	e := &tasksEnv{n: n, ids: make([]string, n)}
	if e.prices, err = pricing.Parse([]byte(benchPrices)); err != nil {
		return nil, fmt.Errorf("bench prices: %w", err)
	}
	if e.net, err = fakenet.New(); err != nil {
		return nil, fmt.Errorf("fake internet: %w", err)
	}
	defer func() {
		if err != nil {
			e.close(ctx)
		}
	}()
	real := make([]byte, 16)
	rand.Read(real)
	e.mock = &modelMock{key: "sk-bench-" + hex.EncodeToString(real)}
	e.net.Handle("/v1/chat/completions", e.mock)
	eg, err := fakenetEgress(e.net)
	if err != nil {
		return nil, err
	}
	if e.b, err = startBenchServer(ctx, pool, eg, daemonTuning{prices: e.prices}); err != nil {
		return nil, err
	}
	if _, err := e.b.c.CreateTenant(ctx, client.TenantRequest{Name: "bench-tasks", MaxSandboxes: n}); err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	k, err := e.b.c.CreateKey(ctx, "bench-tasks", "bench")
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	e.key = k.Key
	e.c = client.New(e.b.url, e.key)
	_, err = e.c.CreateSecret(ctx, client.SecretRequest{Name: "OPENAI_API_KEY", Value: e.mock.key, Hosts: []string{fakenet.AllowedName}})
	if err != nil {
		return nil, fmt.Errorf("create secret: %w", err)
	}
	return e, nil
}

// fakenetEgress is the egress config of serve --egress-dns and
// --egress-ca-file for the fake internet n.
func fakenetEgress(n *fakenet.Net) (*egress.Config, error) {
	f, err := os.CreateTemp("", "airlock-bench-ca-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(n.CAPEM)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return egressConfig(n.DNS, f.Name(), nil)
}

// close cancels the tasks still going and destroys what still runs
// (after a failure or Ctrl-C: a daemon that stops leaves its sandboxes
// running), then stops the daemon and the fake internet.
func (e *tasksEnv) close(ctx context.Context) {
	bg := context.WithoutCancel(ctx)
	if e.c != nil {
		for _, id := range e.ids {
			if id == "" {
				continue
			}
			if t, err := e.c.GetTask(bg, id); err == nil && !t.Ended() {
				e.c.CancelTask(bg, id)
			}
		}
		if live, err := e.liveSandboxes(bg); err == nil {
			for _, sb := range live {
				e.c.DeleteSandbox(bg, sb.ID)
			}
		}
	}
	if e.b != nil {
		e.b.close()
	}
	if e.net != nil {
		if err := e.net.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "airlock bench tasks: remove the fake internet: %v\n", err)
		}
	}
}

// run submits the tasks at once, waits for them all, checks each and
// prints the table.
func (e *tasksEnv) run(ctx context.Context) error {
	submit := make([]time.Duration, e.n)
	errs := make([]error, e.n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range e.n {
		wg.Go(func() {
			t := time.Now()
			task, err := e.c.CreateTask(ctx, taskRequest(i))
			submit[i], e.ids[i] = time.Since(t), task.ID
			if err != nil {
				errs[i] = fmt.Errorf("submit task %d: %w", i, err)
				return
			}
			if _, err := e.c.FollowTask(ctx, task.ID, 0, func(client.TaskEvent) error { return nil }); err != nil {
				errs[i] = fmt.Errorf("follow task %d (%s): %w", i, task.ID, err)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := interrupted(ctx); err != nil {
		return err
	}
	tasks := make([]client.Task, e.n)
	for i, id := range e.ids {
		t, err := e.check(ctx, i, id)
		if err != nil {
			return err
		}
		tasks[i] = t
	}
	if err := e.checkAfter(ctx); err != nil {
		return err
	}
	e.print(submit, tasks, wall)
	return nil
}

// taskRequest is task i: one Chat Completions call with the bound key
// (curl trusts the proxy's CA through CURL_CA_BUNDLE, set in every
// sandbox), the answer's content kept as answer.txt.
func taskRequest(i int) client.TaskRequest {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"task %d"}]}`, benchModel, i)
	script := `set -e
curl -sS --fail --max-time 60 -H "Authorization: Bearer $OPENAI_API_KEY" -H 'Content-Type: application/json' \
  -d '` + body + `' https://` + fakenet.AllowedName + `/v1/chat/completions > reply.json
sed -n 's/.*"content":"\([^"]*\)".*/\1/p' reply.json > answer.txt
test -s answer.txt
`
	return client.TaskRequest{
		Harness: "generic", Prompt: fmt.Sprintf("task %d", i), Command: []string{"sh", "-c", script},
		Allow: []string{fakenet.AllowedName}, Secrets: []string{"OPENAI_API_KEY"},
		Artifacts: []string{"answer.txt"}, TimeoutS: 300,
	}
}

// taskCost is what one task's call costs with the bench's prices.
func (e *tasksEnv) taskCost() float64 {
	usd, _ := e.prices.Model(benchModel, pricing.Tokens{Input: mockPromptTokens - mockCachedTokens,
		CachedInput: mockCachedTokens, Output: mockCompletionTokens})
	return usd
}

// check fails unless task i succeeded with exactly the mock's one call,
// its cost and its answer as the artifact.
func (e *tasksEnv) check(ctx context.Context, i int, id string) (client.Task, error) {
	t, err := e.c.GetTask(ctx, id)
	if err != nil {
		return t, err
	}
	raw, _ := json.Marshal(t)
	u := t.Usage
	switch want := e.taskCost(); {
	case t.State != client.TaskSucceeded:
		return t, fmt.Errorf("task %d (%s) %s: %s", i, id, t.State, t.Reason)
	case u.Calls != 1 || u.UnmeteredCalls != 0 || u.InputTokens != mockPromptTokens-mockCachedTokens ||
		u.CachedInputTokens != mockCachedTokens || u.OutputTokens != mockCompletionTokens || u.ReasoningTokens != mockReasoningTokens:
		return t, fmt.Errorf("task %d (%s): usage %+v, want 1 metered call of %d input, %d cached, %d output (%d reasoning) tokens; the task: %s",
			i, id, u, mockPromptTokens-mockCachedTokens, mockCachedTokens, mockCompletionTokens, mockReasoningTokens, raw)
	case t.CostUSD == nil:
		return t, fmt.Errorf("task %d (%s): no cost_usd with a price table; the task: %s", i, id, raw)
	case math.Abs(t.CostUSD.Model-want) > 1e-12 || math.Abs(t.CostUSD.Total-t.CostUSD.Model-t.CostUSD.Compute) > 1e-12:
		return t, fmt.Errorf("task %d (%s): cost_usd %+v, want model %.6f; the task: %s", i, id, *t.CostUSD, want, raw)
	case t.CreatedAt.IsZero() || t.EndedAt.Before(t.CreatedAt):
		return t, fmt.Errorf("task %d (%s): created_at %v, ended_at %v", i, id, t.CreatedAt, t.EndedAt)
	}
	var answer bytes.Buffer
	if _, err := e.c.ReadTaskArtifact(ctx, id, "answer.txt", &answer); err != nil {
		return t, fmt.Errorf("task %d (%s): %w", i, id, err)
	}
	if got, want := strings.TrimSpace(answer.String()), mockAnswer(fmt.Sprintf("task %d", i)); got != want {
		return t, fmt.Errorf("task %d (%s): artifact answer.txt holds %q, want %q", i, id, got, want)
	}
	return t, nil
}

// checkAfter fails unless the mock answered each task once with the real
// key and no sandbox is left running.
func (e *tasksEnv) checkAfter(ctx context.Context) error {
	if calls, bad := e.mock.calls.Load(), e.mock.refused.Load(); calls != int64(e.n) || bad != 0 {
		return fmt.Errorf("the model mock answered %d calls and refused %d (wrong key or request); want %d answered", calls, bad, e.n)
	}
	live, err := e.liveSandboxes(ctx)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		var b strings.Builder
		for _, sb := range live {
			fmt.Fprintf(&b, " %s (%s)", sb.ID, sb.State)
		}
		return fmt.Errorf("%d sandboxes left after every task ended:%s", len(live), b.String())
	}
	return nil
}

// liveSandboxes lists the tenant's sandboxes that are not stopped.
func (e *tasksEnv) liveSandboxes(ctx context.Context) ([]client.Sandbox, error) {
	var live []client.Sandbox
	for after := ""; ; {
		p, err := e.c.ListSandboxes(ctx, client.ListOptions{After: after})
		if err != nil {
			return nil, fmt.Errorf("list sandboxes: %w", err)
		}
		for _, sb := range p.Sandboxes {
			if sb.State != client.StateStopped {
				live = append(live, sb)
			}
		}
		if after = p.Next; after == "" {
			return live, nil
		}
	}
}

func (e *tasksEnv) print(submit []time.Duration, tasks []client.Task, wall time.Duration) {
	var total, queued, running []time.Duration
	var cost float64
	for _, t := range tasks {
		total = append(total, t.EndedAt.Sub(t.CreatedAt))
		queued = append(queued, t.StartedAt.Sub(t.CreatedAt))
		running = append(running, t.EndedAt.Sub(t.StartedAt))
		cost += t.CostUSD.Total
	}
	// 11 wide: a task's times pass 10 s.
	fmt.Printf("%-32s %11s %11s %11s %11s %11s\n", "step", "p50", "p95", "p99", "max", "all done")
	rows := []row{{name: "POST /v1/tasks", d: submit}, {name: "task, created_at -> ended_at", d: total},
		{name: "  created_at -> started_at", d: queued}, {name: "  started_at -> ended_at", d: running}}
	for i, r := range rows {
		p := percentiles(r.d)
		all := ""
		if i == 1 {
			all = ms(wall)
		}
		line := fmt.Sprintf("%-32s %11s %11s %11s %11s %11s", r.name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]), all)
		fmt.Println(strings.TrimRight(line, " "))
	}
	fmt.Printf("cost_usd: $%.6f over %d tasks ($%.6f each: 1 call, %d input, %d cached, %d output tokens of %s)\n",
		cost, len(tasks), e.taskCost(), mockPromptTokens-mockCachedTokens, mockCachedTokens, mockCompletionTokens, benchModel)
	fmt.Printf("ok: %d succeeded, each 1 proxy-counted call and its answer as artifact; no sandbox left running\n", len(tasks))
}

// modelMock answers OpenAI Chat Completions as a model would (one JSON
// answer, no stream) with fixed token counts, to callers with its key
// only: a call that gets an answer proves the proxy put the key in.
type modelMock struct {
	key     string
	calls   atomic.Int64 // answered
	refused atomic.Int64
}

func mockAnswer(prompt string) string { return "the answer to " + prompt }

func (m *modelMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if r.Method != http.MethodPost || host != fakenet.AllowedName {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.Header.Get("Authorization") != "Bearer "+m.key {
		m.refused.Add(1)
		http.Error(w, `{"error": {"message": "invalid api key", "type": "invalid_request_error"}}`, http.StatusUnauthorized)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != benchModel || len(req.Messages) == 0 {
		m.refused.Add(1)
		http.Error(w, `{"error": {"message": "bad request", "type": "invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-bench", "object": "chat.completion", "created": time.Now().Unix(), "model": benchModel,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": mockAnswer(req.Messages[len(req.Messages)-1].Content)}}},
		"usage": map[string]any{
			"prompt_tokens": mockPromptTokens, "completion_tokens": mockCompletionTokens,
			"total_tokens":              mockPromptTokens + mockCompletionTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": mockCachedTokens},
			"completion_tokens_details": map[string]any{"reasoning_tokens": mockReasoningTokens},
		},
	})
}
