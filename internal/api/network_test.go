package api

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/egress"
)

func TestNetworkRoutes(t *testing.T) {
	e := newEnv(t)
	var sb sandboxJSON
	e.must(call{method: "POST", path: "/v1/sandboxes", cred: e.alice,
		body: `{"network":{"mode":"allowlist","allow":["pypi.org","*.pythonhosted.org:443"]}}`}, 201, &sb)
	want := networkJSON{Mode: "allowlist", Allow: []string{"pypi.org", "*.pythonhosted.org:443"}, Deny: []string{}}
	if d := cmp.Diff(want, sb.Network); d != "" {
		t.Errorf("created with (-want +got):\n%s", d)
	}
	path := "/v1/sandboxes/" + sb.ID + "/network"
	var got networkJSON
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GET (-want +got):\n%s", d)
	}
	e.must(call{method: "PUT", path: path, cred: e.alice, body: `{"mode":"allowlist","allow":["example.com"],"deny":["bad.example.com"]}`}, 200, &got)
	want = networkJSON{Mode: "allowlist", Allow: []string{"example.com"}, Deny: []string{"bad.example.com"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PUT (-want +got):\n%s", d)
	}

	// Bad input points at the entry and changes nothing.
	for _, tc := range []struct{ body, want string }{
		{`{"mode":"allowlist","allow":["ok.com","https://x.com"]}`, "allow[1]"},
		{`{"mode":"allowlist","deny":["*."]}`, "deny[0]"},
		{`{"mode":"open"}`, "mode"},
		{`{"allow":["x.com"]}`, "mode"},
		{`{"mode":"allowlist","allow":"x.com"}`, "allow"},
		{`{"mode":"allowlist","extra":1}`, "extra"},
	} {
		a := e.must(call{method: "PUT", path: path, cred: e.alice, body: tc.body}, 400, nil)
		if code, msg := a.errCode(); code != "invalid_argument" || !strings.Contains(msg, tc.want) {
			t.Errorf("PUT %s: %s %q, want a message naming %s", tc.body, code, msg, tc.want)
		}
	}
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after bad PUTs (-want +got):\n%s", d)
	}

	// A sandbox token may read its policy but never widen it; another
	// tenant sees nothing.
	tok := e.token(e.alice, sb.ID, 60)
	e.must(call{method: "GET", path: path, cred: tok}, 200, nil)
	e.must(call{method: "PUT", path: path, cred: tok, body: `{"mode":"allowlist","allow":["*.com"]}`}, 403, nil)
	e.must(call{method: "GET", path: path, cred: e.bob}, 404, nil)
	e.must(call{method: "PUT", path: path, cred: e.bob, body: `{"mode":"none"}`}, 404, nil)
	e.must(call{method: "GET", path: path + "/log", cred: e.bob}, 404, nil)
}

func TestNetworkLogRoute(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	e.m.netlog = map[string][]egress.Event{id: {
		{Seq: 3, Time: t0, SandboxID: id, Protocol: "connect", Host: "pypi.org", Port: 443, Decision: "allowed", Rule: "pypi.org", BytesUp: 10, BytesDown: 20},
		{Seq: 7, Time: t0.Add(time.Second), SandboxID: id, Protocol: "http", Host: "evil.com", Port: 80, Decision: "denied", Reason: "no allow rule matches evil.com:80", Status: 403},
	}}
	path := "/v1/sandboxes/" + id + "/network/log"
	var page struct{ Events []egress.Event }
	e.must(call{method: "GET", path: path, cred: e.alice}, 200, &page)
	if len(page.Events) != 2 || page.Events[0].Host != "pypi.org" || page.Events[1].Decision != "denied" {
		t.Errorf("log: %+v", page.Events)
	}
	e.must(call{method: "GET", path: path + "?after=3&limit=1", cred: e.alice}, 200, &page)
	if len(page.Events) != 1 || page.Events[0].Seq != 7 {
		t.Errorf("page after 3: %+v", page.Events)
	}
	for _, q := range []string{"?after=-1", "?after=x", "?limit=0", "?limit=1001", "?nope=1"} {
		e.must(call{method: "GET", path: path + q, cred: e.alice}, 400, nil)
	}
}
