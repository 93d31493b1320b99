package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
)

// connectAt runs the bridge over in-memory transports against the API at
// url, with the client asking for revision version ("": its newest).
func connectAt(t *testing.T, url, key, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := NewServer(Fixed(client.New(url, key))).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), ct,
		&mcpsdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// fastPoll makes waiting calls look for approvals often, for the test.
func fastPoll(t *testing.T) {
	old := approvalPoll
	approvalPoll = 20 * time.Millisecond
	t.Cleanup(func() { approvalPoll = old })
}

// decoded is a tool's structured result as T.
func decoded[T any](t *testing.T, res *mcpsdk.CallToolResult) T {
	t.Helper()
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

func newSandbox(t *testing.T, cs *mcpsdk.ClientSession) string {
	t.Helper()
	out, res := callTool(t, cs, "sandbox_create", map[string]any{})
	id, _ := out["sandbox_id"].(string)
	if res.IsError || id == "" {
		t.Fatalf("sandbox_create: %s", resultText(res))
	}
	return id
}

// TestApprovalTools: an operator's agent lists, reads and decides
// approvals; deciding twice, a bad decision and an unknown id are tool
// errors that say what to do; a server without approvals says so.
func TestApprovalTools(t *testing.T) {
	f := newApprovalFake(t)
	cs := connect(t, f.Server, f.AdminKey)
	id := newSandbox(t, cs)
	mine, other := f.open(id, "", "a.test"), f.open("sb-other", "", "b.test")

	type list struct{ Approvals []approvalOut }
	_, res := callTool(t, cs, "approval_list", nil)
	if got := decoded[list](t, res); res.IsError || len(got.Approvals) != 2 {
		t.Fatalf("approval_list: %s", resultText(res))
	}
	_, res = callTool(t, cs, "approval_list", map[string]any{"sandbox_id": id})
	got := decoded[list](t, res).Approvals
	if len(got) != 1 || got[0].ID != mine || got[0].What != "connect to a.test:80 (http)" || got[0].State != "pending" {
		t.Errorf("approval_list of %s: %+v", id, got)
	}
	_, res = callTool(t, cs, "approval_decide", map[string]any{"id": mine, "decision": "allow", "remember": "sandbox", "reason": "fine"})
	dec := decoded[approvalOut](t, res)
	if want := (approvalOut{ID: mine, SandboxID: id, Kind: "egress", What: "connect to a.test:80 (http)", State: "allowed",
		DecidedBy: "key-admin", Reason: "fine", Remember: "sandbox"}); res.IsError || cmp.Diff(want, dec, cmpTimes) != "" {
		t.Errorf("approval_decide: %s", cmp.Diff(want, dec, cmpTimes))
	}
	if _, res := callTool(t, cs, "approval_get", map[string]any{"id": mine}); res.IsError || decoded[approvalOut](t, res).State != "allowed" {
		t.Errorf("approval_get after deciding: %s", resultText(res))
	}
	_, res = callTool(t, cs, "approval_list", map[string]any{"state": "allowed"})
	if got := decoded[list](t, res).Approvals; len(got) != 1 || got[0].ID != mine {
		t.Errorf("approval_list state allowed: %+v", got)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"approval_decide", map[string]any{"id": mine, "decision": "deny"}, []string{"already allowed", "key-admin"}},
		{"approval_decide", map[string]any{"id": other, "decision": "maybe"}, []string{"want allow or deny"}},
		{"approval_decide", map[string]any{"id": "apv-nope", "decision": "deny"}, []string{"apv-nope not found", "approval_list"}},
		{"approval_get", map[string]any{"id": "apv-nope"}, []string{"apv-nope not found"}},
		{"approval_list", map[string]any{"state": "maybe"}, []string{"want pending, allowed, denied, timed_out or all"}},
	} {
		_, res := callTool(t, cs, c.tool, c.args)
		for _, w := range c.want {
			if !res.IsError || !strings.Contains(resultText(res), w) {
				t.Errorf("%s %v: error %v, %q lacks %q", c.tool, c.args, res.IsError, resultText(res), w)
			}
		}
	}

	plain := clienttest.NewServer(t)
	if _, res := callTool(t, connect(t, plain, plain.AdminKey), "approval_list", nil); !res.IsError || !strings.Contains(resultText(res), "no approvals") {
		t.Errorf("approval_list on a server without approvals: %q", resultText(res))
	}
}

var cmpTimes = cmp.FilterPath(func(p cmp.Path) bool {
	switch p.Last().String() {
	case ".RequestedAt", ".Deadline", ".DecidedAt":
		return true
	}
	return false
}, cmp.Ignore())

// elicited records the questions a client was asked and answers them.
type elicited struct {
	asked  chan *mcpsdk.ElicitParams
	answer func(ctx context.Context, p *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error)
}

func newElicited(answer func(ctx context.Context, p *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error)) *elicited {
	return &elicited{asked: make(chan *mcpsdk.ElicitParams, 10), answer: answer}
}

func (e *elicited) options() *mcpsdk.ClientOptions {
	return &mcpsdk.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		e.asked <- r.Params
		return e.answer(ctx, r.Params)
	}}
}

func accept(content map[string]any) func(context.Context, *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
	return func(context.Context, *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
		return &mcpsdk.ElicitResult{Action: "accept", Content: content}, nil
	}
}

func action(a string) func(context.Context, *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
	return func(context.Context, *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
		return &mcpsdk.ElicitResult{Action: a}, nil
	}
}

// TestAskApproval: a run_command held by an approval asks the client's
// user, by elicitation up to 2025-11-25 and by input_required from
// 2026-07-28, and the answer decides it with the caller's key: allow,
// deny with a reason, decline (denied), cancel (left pending, decided
// elsewhere; asked once only).
func TestAskApproval(t *testing.T) {
	fastPoll(t)
	for _, rev := range []string{"2025-11-25", "2025-06-18", "2026-07-28"} {
		for _, c := range []struct {
			name   string
			answer func(context.Context, *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error)
			want   approvalOut // of the fields compared below
			stdout string
		}{
			{"allow", accept(map[string]any{"decision": "allow", "remember": "sandbox"}),
				approvalOut{State: "allowed", DecidedBy: "key-admin", Remember: "sandbox", Reason: "answered in the MCP client"}, "allowed\n"},
			{"deny", accept(map[string]any{"decision": "deny", "reason": "not today"}),
				approvalOut{State: "denied", DecidedBy: "key-admin", Remember: "once", Reason: "not today"}, "denied\n"},
			{"decline", action("decline"),
				approvalOut{State: "denied", DecidedBy: "key-admin", Remember: "once", Reason: "declined in the MCP client"}, "denied\n"},
			{"cancel", action("cancel"),
				approvalOut{State: "allowed", DecidedBy: "key-elsewhere", Remember: "once"}, "allowed\n"},
		} {
			t.Run(rev+"/"+c.name, func(t *testing.T) {
				f := newApprovalFake(t)
				e := newElicited(c.answer)
				cs := connectAt(t, f.URL, f.AdminKey, rev, e.options())
				id := newSandbox(t, cs)
				done := make(chan *mcpsdk.CallToolResult, 1)
				go func() {
					_, res := callTool(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "ask " + id + " a.test"})
					done <- res
				}()
				var q *mcpsdk.ElicitParams
				select {
				case q = <-e.asked:
				case <-time.After(10 * time.Second):
					t.Fatal("the client was not asked")
				}
				a := f.asked(id)
				if !strings.Contains(q.Message, a.ID) || !strings.Contains(q.Message, "connect to a.test:80 (http)") || !strings.Contains(q.Message, id) {
					t.Errorf("asked %q", q.Message)
				}
				if s, _ := json.Marshal(q.RequestedSchema); !strings.Contains(string(s), `"enum":["allow","deny"]`) || !strings.Contains(string(s), `"remember"`) {
					t.Errorf("asked with the schema %s", s)
				}
				if c.name == "cancel" {
					// Left pending: someone else decides.
					time.Sleep(100 * time.Millisecond)
					f.decide(a.ID, client.ApprovalAllowed, client.ApprovalDecision{}, "key-elsewhere")
				}
				var res *mcpsdk.CallToolResult
				select {
				case res = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("run_command did not return")
				}
				out := decoded[runOut](t, res)
				if res.IsError || out.Stdout != c.stdout || len(out.Approvals) != 1 {
					t.Fatalf("run_command: %s", resultText(res))
				}
				got := out.Approvals[0]
				got.RequestedAt, got.Deadline, got.DecidedAt = time.Time{}, time.Time{}, time.Time{}
				want := c.want
				want.ID, want.SandboxID, want.Kind, want.What = a.ID, id, "egress", "connect to a.test:80 (http)"
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("the approval as the result tells it (-want +got):\n%s", d)
				}
				if n := len(e.asked); n != 0 {
					t.Errorf("asked %d more times", n)
				}
				f.mu.Lock()
				background := len(f.started) == 1
				f.mu.Unlock()
				if stateless := rev >= firstStateless; background != stateless {
					t.Errorf("ran as a background process: %v, want %v at %s (a 2026-07-28 call must outlive its first request)", background, stateless, rev)
				}
			})
		}
	}
}

// TestAskMoot: a question whose approval is decided elsewhere meanwhile
// is withdrawn (the client's handler sees its request cancelled).
func TestAskMoot(t *testing.T) {
	fastPoll(t)
	f := newApprovalFake(t)
	withdrawn := make(chan struct{})
	e := newElicited(func(ctx context.Context, _ *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
		<-ctx.Done()
		close(withdrawn)
		return nil, ctx.Err()
	})
	cs := connectAt(t, f.URL, f.AdminKey, "2025-11-25", e.options())
	id := newSandbox(t, cs)
	done := make(chan *mcpsdk.CallToolResult, 1)
	go func() {
		_, res := callTool(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "ask " + id + " a.test"})
		done <- res
	}()
	<-e.asked
	f.decide(f.pending(id).ID, client.ApprovalDenied, client.ApprovalDecision{Reason: "no"}, "key-elsewhere")
	select {
	case <-withdrawn:
	case <-time.After(10 * time.Second):
		t.Fatal("the question was not withdrawn")
	}
	if res := <-done; res.IsError || decoded[runOut](t, res).Stdout != "denied\n" {
		t.Errorf("run_command: %s", resultText(res))
	}
}

// TestAskNobody: a client that cannot be asked waits as before, at any
// revision, and the result names the approval it waited on.
func TestAskNobody(t *testing.T) {
	fastPoll(t)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			f := newApprovalFake(t)
			cs := connectAt(t, f.URL, f.AdminKey, rev, nil)
			id := newSandbox(t, cs)
			done := make(chan *mcpsdk.CallToolResult, 1)
			go func() {
				_, res := callTool(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "ask " + id + " a.test"})
				done <- res
			}()
			a := f.pending(id)
			time.Sleep(100 * time.Millisecond) // a poll or more
			f.decide(a.ID, client.ApprovalAllowed, client.ApprovalDecision{}, "key-elsewhere")
			res := <-done
			out := decoded[runOut](t, res)
			if res.IsError || out.Stdout != "allowed\n" || len(out.Approvals) != 1 || out.Approvals[0].ID != a.ID || out.Approvals[0].State != "allowed" {
				t.Errorf("run_command: %s", resultText(res))
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.started) != 0 {
				t.Errorf("ran as a background process: %q", f.started)
			}
		})
	}
}

// TestInputRequired is the 2026-07-28 round trip as the wire has it: the
// first call ends input_required, with the question under the approval's
// id and a requestState; a retry with a changed state or other arguments
// is refused; the genuine retry applies the answer and returns the
// command's result.
func TestInputRequired(t *testing.T) {
	fastPoll(t)
	f := newApprovalFake(t)
	opts := newElicited(action("cancel")).options()
	opts.MultiRoundTrip = &mcpsdk.MultiRoundTripOptions{Disabled: true}
	cs := connectAt(t, f.URL, f.AdminKey, "2026-07-28", opts)
	id := newSandbox(t, cs)
	args := map[string]any{"sandbox_id": id, "command": "ask " + id + " a.test"}
	first, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "run_command", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	a := f.pending(id)
	q, _ := first.InputRequests[a.ID].(*mcpsdk.ElicitParams)
	if !first.NeedsInput() || len(first.InputRequests) != 1 || q == nil || !strings.Contains(q.Message, "a.test") || first.RequestState == "" {
		t.Fatalf("first round: input required %v, %+v, state %q", first.NeedsInput(), first.InputRequests, first.RequestState)
	}
	decline := mcpsdk.InputResponseMap{a.ID: &mcpsdk.ElicitResult{Action: "decline"}}
	retry := func(args map[string]any, state string) *mcpsdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "run_command", Arguments: args, InputResponses: decline, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tampered := []byte(first.RequestState)
	tampered[3] ^= 1
	if res := retry(args, string(tampered)); !res.IsError || !strings.Contains(resultText(res), "requestState") {
		t.Errorf("a retry with a changed requestState: %s", resultText(res))
	}
	if res := retry(map[string]any{"sandbox_id": id, "command": "echo other"}, first.RequestState); !res.IsError || !strings.Contains(resultText(res), "another call") {
		t.Errorf("a retry with other arguments: %s", resultText(res))
	}
	if got := f.pending(id); got.ID != a.ID {
		t.Fatalf("refused retries changed the approval: %+v", got)
	}
	res := retry(args, first.RequestState)
	out := decoded[runOut](t, res)
	if res.IsError || res.NeedsInput() || out.Stdout != "denied\n" || len(out.Approvals) != 1 || out.Approvals[0].Reason != "declined in the MCP client" {
		t.Errorf("the retry with the answer: %s", resultText(res))
	}
}

// TestInputRequiredCancel: a 2026-07-28 call cancelled while its command
// runs kills the command, as a cancelled exec would.
func TestInputRequiredCancel(t *testing.T) {
	fastPoll(t)
	f := newApprovalFake(t)
	cs := connectAt(t, f.URL, f.AdminKey, "2026-07-28", newElicited(action("cancel")).options())
	id := newSandbox(t, cs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox_id": id, "command": "sleep"}})
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		n := len(f.started)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
	}
	cancel()
	<-done
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		n := len(f.signals)
		f.mu.Unlock()
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call's process was not killed")
		}
	}
}

// TestRequestState: a state opens only unchanged, under the key that
// sealed it, and before it expires.
func TestRequestState(t *testing.T) {
	s, other := newSealer([]byte("k1")), newSealer([]byte("k2"))
	now := time.Now()
	st := callState{Tool: "run_command", Args: "x", Pid: 7, Seen: []string{"apv-1"}, Expires: now.Add(time.Hour).Unix()}
	tok, err := s.seal(st)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.open(tok, now); err != nil || cmp.Diff(st, got) != "" {
		t.Errorf("open: %v %s", err, cmp.Diff(st, got))
	}
	if same := newSealer([]byte("k1")); func() error { _, err := same.open(tok, now); return err }() != nil {
		t.Error("another sealer with the same key (another replica) refused the state")
	}
	body, sig, _ := strings.Cut(tok, ".")
	for name, bad := range map[string]string{
		"other key": "", "changed body": body[:len(body)-2] + "AA." + sig, "no signature": body, "empty": "", "junk": "a.b.c",
	} {
		sl := s
		if name == "other key" {
			sl, bad = other, tok
		}
		if _, err := sl.open(bad, now); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := s.open(tok, now.Add(2*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired state: %v", err)
	}
}

// TestAskTask: a task_run held by an approval of its task's sandbox asks
// as run_command does, at both eras; at 2026-07-28 the task goes on
// between the rounds and is followed again.
func TestAskTask(t *testing.T) {
	fastPoll(t)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			f := newApprovalFake(t)
			e := newElicited(accept(map[string]any{"decision": "deny", "reason": "no network for tasks"}))
			cs := connectAt(t, f.URL, f.AdminKey, rev, e.options())
			_, res := callTool(t, cs, "task_run", map[string]any{"harness": "generic", "prompt": "ask a.test"})
			out := decoded[taskOut](t, res)
			if res.IsError || out.Summary != "denied" || len(out.Approvals) != 1 || out.Approvals[0].Task != out.TaskID ||
				out.Approvals[0].Reason != "no network for tasks" || len(e.asked) != 1 {
				t.Errorf("task_run: %s (asked %d times)", resultText(res), len(e.asked))
			}
			if q := <-e.asked; !strings.Contains(q.Message, "task "+out.TaskID) {
				t.Errorf("asked %q", q.Message)
			}
		})
	}
}

// TestAskForm: the question's form offers what the server can remember:
// the host for a connection, the same request for a task's command or
// tool call, nothing for a plain sandbox's command; the answer is read
// back with the same words.
func TestAskForm(t *testing.T) {
	remember := func(a client.Approval) []string {
		p := askParams(a).RequestedSchema.(map[string]any)["properties"].(map[string]any)
		r, ok := p["remember"].(map[string]any)
		if !ok {
			return nil
		}
		return r["enum"].([]string)
	}
	for _, tc := range []struct {
		a    client.Approval
		want []string
	}{
		{client.Approval{Kind: "egress", Egress: &client.ApprovalEgress{Host: "h", Port: 80}}, []string{"once", "sandbox"}},
		{client.Approval{Kind: "harness", Task: "tsk_1", Harness: &client.ApprovalHarness{Harness: "claude", Tool: "Bash"}}, []string{"once", "task"}},
		{client.Approval{Kind: "command", Task: "tsk_1", Command: &client.ApprovalCommand{Text: "deploy"}}, []string{"once", "task"}},
		{client.Approval{Kind: "command", Command: &client.ApprovalCommand{Text: "deploy"}}, nil},
	} {
		if got := remember(tc.a); !slices.Equal(got, tc.want) {
			t.Errorf("%s (task %q): remember %v, want %v", tc.a.Kind, tc.a.Task, got, tc.want)
		}
	}
	d, err := decisionOf(map[string]any{"decision": "allow", "remember": "task"})
	if err != nil || d.Remember != "task" {
		t.Errorf("remember task: %+v, %v", d, err)
	}
	if _, err := decisionOf(map[string]any{"decision": "allow", "remember": "forever"}); err == nil {
		t.Error("remember forever was taken")
	}
}
