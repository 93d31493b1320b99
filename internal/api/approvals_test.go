package api

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// newApprovalsEnv is newEnv with an approvals service on the same store.
func newApprovalsEnv(t *testing.T) (*env, *approvals.Service) {
	t.Helper()
	st := teststore.Open(t)
	e := &env{t: t, m: newFakeManager(), st: st, now: t0}
	svc := approvals.New(approvals.Options{Store: st, Now: e.clock, Logger: slog.New(slog.DiscardHandler)})
	e.srv = newServer(t, New(e.m, st, Options{MaxJSONBody: 4096, Now: e.clock, Logger: slog.New(slog.DiscardHandler),
		Approvals: svc}))
	e.admin = e.addTenant("root", true)
	e.alice = e.addTenant("alice", false)
	e.bob = e.addTenant("bob", false)
	return e, svc
}

// TestApprovalsRoutes: alice's key lists, reads and decides alice's
// approval; her sandbox's token gets 403 on every route and bob 404;
// bad input is 400 naming the field.
func TestApprovalsRoutes(t *testing.T) {
	e, svc := newApprovalsEnv(t)
	sb := e.sandbox(e.alice)
	tok := e.token(e.alice, sb, 600)
	w, err := svc.Open(context.Background(), approvals.Request{TenantID: "ten_alice", SandboxID: sb,
		Deadline: t0.Add(time.Minute), Egress: &approvals.Egress{Host: "denied.test", Port: 80, Protocol: "http"}})
	if err != nil {
		t.Fatal(err)
	}
	id := w.Approval().ID
	var list struct{ Approvals []approvals.Approval }
	e.must(call{method: "GET", path: "/v1/approvals?state=pending", cred: e.alice}, 200, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].ID != id || list.Approvals[0].Egress.Host != "denied.test" {
		t.Fatalf("alice's pending: %+v", list)
	}
	e.must(call{method: "GET", path: "/v1/approvals?state=pending", cred: e.bob}, 200, &list)
	if len(list.Approvals) != 0 {
		t.Errorf("bob sees %+v", list)
	}
	for _, c := range []struct {
		call
		status int
		code   string
		says   string
	}{
		{call{method: "GET", path: "/v1/approvals", cred: tok}, 403, codeForbidden, "token"},
		{call{method: "GET", path: "/v1/approvals/" + id, cred: tok}, 403, codeForbidden, "token"},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: tok, body: `{"decision":"allow"}`}, 403, codeForbidden, "token"},
		{call{method: "GET", path: "/v1/approvals/" + id, cred: e.bob}, 404, codeNotFound, id},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.bob, body: `{"decision":"allow"}`}, 404, codeNotFound, id},
		{call{method: "GET", path: "/v1/approvals?state=maybe", cred: e.alice}, 400, codeInvalid, "state"},
		{call{method: "GET", path: "/v1/approvals?limit=3", cred: e.alice}, 400, codeInvalid, "limit"},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{"decision":"yes"}`}, 400, codeInvalid, `"decision"`},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{}`}, 400, codeInvalid, `"decision"`},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{"decision":"allow","remember":"always"}`}, 400, codeInvalid, `"remember"`},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{"decision":"allow","reason":7}`}, 400, codeInvalid, `"reason"`},
		{call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{"decision":"allow","why":"x"}`}, 400, codeInvalid, `why`},
	} {
		a := e.do(c.call)
		code, msg := a.errCode()
		if a.status != c.status || code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s %s %s: %d %s %q; want %d %s naming %s", c.method, c.path, c.body, a.status, code, msg, c.status, c.code, c.says)
		}
	}
	var got approvals.Approval
	e.must(call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice,
		body: `{"decision":"deny","reason":"no need"}`}, 200, &got)
	if got.State != approvals.Denied || got.DecidedBy != "key_alice" || got.Reason != "no need" || got.Remember != "once" {
		t.Errorf("decided: %+v", got)
	}
	if a, err := w.Wait(context.Background()); err != nil || a.State != approvals.Denied {
		t.Errorf("waiter: %+v, %v", a, err)
	}
	e.must(call{method: "GET", path: "/v1/approvals/" + id, cred: e.alice}, 200, &got)
	if got.State != approvals.Denied {
		t.Errorf("read back: %+v", got)
	}
	a := e.do(call{method: "POST", path: "/v1/approvals/" + id + "/decision", cred: e.alice, body: `{"decision":"allow"}`})
	if code, _ := a.errCode(); a.status != 409 || code != codeConflict {
		t.Errorf("decided twice: %d %s", a.status, a.body)
	}
}

// TestApprovalsUnavailable: a server without the service says so.
func TestApprovalsUnavailable(t *testing.T) {
	e := newEnv(t)
	a := e.do(call{method: "GET", path: "/v1/approvals", cred: e.alice})
	if code, _ := a.errCode(); a.status != 503 || code != codeUnavailable {
		t.Errorf("%d %s", a.status, a.body)
	}
}
