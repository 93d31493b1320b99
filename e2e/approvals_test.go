package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// hooked collects the webhook deliveries of approval events.
type hooked struct {
	mu  sync.Mutex
	evs []client.Event
}

func (h *hooked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var e client.Event
	if err := json.Unmarshal(body, &e); err == nil {
		h.mu.Lock()
		h.evs = append(h.evs, e)
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// approval waits up to 30 s for a delivered event of typ about the
// approval whose data satisfies ok, and returns its data.
func (h *hooked) approval(t *testing.T, typ string, ok func(client.Approval) bool) client.Approval {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, e := range h.evs {
			var a client.Approval
			if e.Type == typ && json.Unmarshal(e.Data, &a) == nil && ok(a) {
				h.mu.Unlock()
				return a
			}
		}
		h.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s delivered", typ)
	return client.Approval{}
}

// curlBG runs curl -i on url in sandbox id in the background.
func curlBG(t *testing.T, c *client.Client, id, url string) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: "curl -s -i --max-time 60 " + url, Timeout: 90 * time.Second})
		if err != nil {
			t.Errorf("curl %s: %v", url, err)
		}
		out <- strings.ReplaceAll(res.Stdout, "\r\n", "\n")
	}()
	return out
}

// pending waits for the one pending approval of sandbox id not in seen.
func pending(t *testing.T, c *client.Client, id string, seen []string) client.Approval {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, a := range must[[]client.Approval](t)(c.ListApprovals(ctx, client.ApprovalPending)) {
			if a.SandboxID == id && !slices.Contains(seen, a.ID) {
				return a
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pending approval for %s", id)
	return client.Approval{}
}

func statusOf(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Status
	}
	return 0
}

// TestApprovalsEgress is issue 26's first two acceptance bullets: a
// sandbox whose policy asks holds curl to denied.test until a person
// decides through the API; webhooks carry the request and the decision;
// deny and timeout give the proxy's 403; remember sandbox lets the next
// request through unasked; the audit log says who decided and why; a
// sandbox token cannot decide and another tenant cannot see.
func TestApprovalsEgress(t *testing.T) {
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS, "--webhooks-allow-private")
	admin := s.admin()
	for _, name := range []string{"apr-a", "apr-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	keyA := must[client.NewKey](t)(admin.CreateKey(ctx, "apr-a", "a"))
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "apr-b", "b"))
	a, b := client.New(s.url, keyA.Key), client.New(s.url, keyB.Key)
	hook := &hooked{}
	recv := httptest.NewServer(hook)
	defer recv.Close()
	must[client.Webhook](t)(a.CreateWebhook(ctx, client.WebhookRequest{URL: recv.URL,
		Events: []string{client.EventApprovalRequested, client.EventApprovalDecided}}))

	asks := &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: []string{fakenet.AllowedName}, Ask: client.Ask{All: true}, AskTimeoutS: 60}
	sb := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{Network: asks}))
	if got := must[client.NetworkPolicy](t)(a.GetNetwork(ctx, sb.ID)); !got.Ask.All || got.AskTimeoutS != 60 {
		t.Errorf("network as shown: %+v, want ask true, ask_timeout_s 60", got)
	}
	var seen []string

	// Held, then allowed once.
	done := curlBG(t, a, sb.ID, "http://denied.test/")
	req := hook.approval(t, client.EventApprovalRequested, func(x client.Approval) bool {
		return x.SandboxID == sb.ID && x.Egress != nil && x.Egress.Host == fakenet.DeniedName && x.Egress.Port == 80
	})
	select {
	case out := <-done:
		t.Fatalf("curl finished while its approval was pending: %q", out)
	default:
	}
	if req.State != client.ApprovalPending || !req.Deadline.After(req.RequestedAt) {
		t.Errorf("requested: %+v", req)
	}
	seen = append(seen, req.ID)
	tok := must[client.Token](t)(a.CreateToken(ctx, sb.ID, time.Minute))
	agent := client.New(s.url, tok.Token)
	if _, err := agent.DecideApproval(ctx, req.ID, client.ApprovalDecision{Decision: "allow"}); statusOf(err) != 403 {
		t.Errorf("sandbox token decides: %v, want 403", err)
	}
	if _, err := b.DecideApproval(ctx, req.ID, client.ApprovalDecision{Decision: "allow"}); statusOf(err) != 404 {
		t.Errorf("another tenant decides: %v, want 404", err)
	}
	if _, err := b.GetApproval(ctx, req.ID); statusOf(err) != 404 {
		t.Errorf("another tenant reads: %v, want 404", err)
	}
	if l := must[[]client.Approval](t)(b.ListApprovals(ctx, "")); len(l) != 0 {
		t.Errorf("another tenant lists %+v", l)
	}
	must[client.Approval](t)(a.DecideApproval(ctx, req.ID, client.ApprovalDecision{Decision: "allow", Reason: "looks fine"}))
	if out := <-done; !strings.Contains(out, " 200 ") || !strings.Contains(out, "hello from denied.test") {
		t.Errorf("allowed curl: %q", out)
	}

	// Asked again (once), denied.
	done = curlBG(t, a, sb.ID, "http://denied.test/")
	ap := pending(t, a, sb.ID, seen)
	seen = append(seen, ap.ID)
	// Through the CLI, this time.
	if out, code := s.cli(keyA.Key, "approvals", "ls"); code != 0 || !strings.Contains(out, ap.ID) || !strings.Contains(out, "http denied.test:80") {
		t.Errorf("airlock approvals ls: exit %d:\n%s", code, out)
	}
	if out, code := s.cli(tok.Token, "approvals", "allow", ap.ID); code == 0 || !strings.Contains(out, "sandbox token") {
		t.Errorf("airlock approvals allow with the sandbox's token: exit %d: %s", code, out)
	}
	if out, code := s.cli(keyA.Key, "approvals", "deny", ap.ID, "--reason", "not now"); code != 0 || !strings.Contains(out, "denied") {
		t.Errorf("airlock approvals deny: exit %d: %s", code, out)
	}
	out := <-done
	for _, want := range []string{"HTTP/1.1 403", "X-Airlock-Egress: denied", "X-Airlock-Egress-Approval: denied", "not now"} {
		if !strings.Contains(out, want) {
			t.Errorf("denied curl: %q lacks %q", out, want)
		}
	}

	// Nobody decides: refused at the timeout.
	short := *asks
	short.AskTimeoutS = 1
	sb2 := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{Network: &short}))
	out = <-curlBG(t, a, sb2.ID, "http://denied.test/")
	for _, want := range []string{"HTTP/1.1 403", "X-Airlock-Egress-Approval: timed_out"} {
		if !strings.Contains(out, want) {
			t.Errorf("timed-out curl: %q lacks %q", out, want)
		}
	}
	timedOut := hook.approval(t, client.EventApprovalDecided, func(x client.Approval) bool { return x.SandboxID == sb2.ID })
	if timedOut.State != client.ApprovalTimedOut || timedOut.DecidedBy != "" {
		t.Errorf("timed out: %+v", timedOut)
	}

	// Allowed and remembered: the next request is not asked about.
	done = curlBG(t, a, sb.ID, "http://denied.test/")
	ap = pending(t, a, sb.ID, seen)
	must[client.Approval](t)(a.DecideApproval(ctx, ap.ID, client.ApprovalDecision{Decision: "allow", Remember: "sandbox"}))
	if out := <-done; !strings.Contains(out, " 200 ") {
		t.Errorf("allowed and remembered: %q", out)
	}
	if out := <-curlBG(t, a, sb.ID, "http://denied.test/"); !strings.Contains(out, " 200 ") {
		t.Errorf("after remember sandbox: %q", out)
	}
	if got := must[client.NetworkPolicy](t)(a.GetNetwork(ctx, sb.ID)); !slices.Contains(got.Allow, "denied.test:80") {
		t.Errorf("allow list after remember sandbox: %v", got.Allow)
	}
	all := must[[]client.Approval](t)(a.ListApprovals(ctx, ""))
	if len(all) != 4 {
		t.Errorf("approvals: %d, want 4 (allow, deny, timeout, remembered): %+v", len(all), all)
	}

	// The audit log: each decision, who made it and why.
	type decided struct{ Actor, State, Reason string }
	var got []decided
	for _, e := range must[[]client.AuditEvent](t)(a.AuditEvents(ctx, sb.ID, client.AuditQuery{Types: []string{client.EventApprovalDecided}})) {
		var x client.Approval
		json.Unmarshal(e.Data, &x)
		got = append(got, decided{e.Actor, x.State, x.Reason})
	}
	want := []decided{{keyA.ID, "allowed", "looks fine"}, {keyA.ID, "denied", "not now"}, {keyA.ID, "allowed", ""}}
	if !slices.Equal(got, want) {
		t.Errorf("audited decisions %+v, want %+v", got, want)
	}
	hook.approval(t, client.EventApprovalDecided, func(x client.Approval) bool { return x.Reason == "not now" && x.DecidedBy == keyA.ID })
}
