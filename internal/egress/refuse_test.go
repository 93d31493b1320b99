package egress

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRefusals: a target the policy or the address checks refuse gets a
// 403 that names the deciding rule, an event saying why, and no connection
// to the target at all.
func TestRefusals(t *testing.T) {
	srv := startTCP(t, func(net.Conn) {})
	other := startTCP(t, func(net.Conn) {})
	p := strconv.Itoa(srv.port())
	self := "127.0.0.1:" + p
	otherRule := "127.0.0.1:" + strconv.Itoa(other.port())
	getAs := func(target, host string) string {
		return fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
	}
	connect := func(target string) string {
		return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	}
	const noRule = "default deny (no allow rule matched)"
	tests := []struct {
		name    string
		policy  Policy
		request string
		proto   string
		host    string
		port    int
		rule    string // the event's Rule; the header says noRule when empty
		reason  string
	}{
		{"name without a rule", allowlist(otherRule), get("denied.example"),
			"http", "denied.example", 80, "", "no allow rule matches denied.example:80"},
		{"deny wins over allow", Policy{Mode: ModeAllowlist, Allow: []string{"blocked.example"}, Deny: []string{"blocked.example"}},
			connect("blocked.example:443"), "connect", "blocked.example", 443, "blocked.example", `denied by rule "blocked.example"`},
		{"loopback port not listed", allowlist(otherRule), get(self),
			"http", "127.0.0.1", srv.port(), "", "no allow rule matches " + self},
		{"loopback port not listed, connect", allowlist(otherRule), connect(self),
			"connect", "127.0.0.1", srv.port(), "", "no allow rule matches " + self},
		{"loopback in another spelling", allowlist(otherRule), getAs("2130706433:"+p, "0x7f000001:"+p),
			"http", "127.0.0.1", srv.port(), "", "no allow rule matches " + self},
		// A rule for the whole internet is not a rule for loopback.
		{"0.0.0.0/0 does not list loopback", allowlist("0.0.0.0/0:" + p), connect(self),
			"connect", "127.0.0.1", srv.port(), "0.0.0.0/0:" + p, "127.0.0.1 is a loopback address"},
		{"Host header names another site", allowlist(self), getAs(self, "evil.example"),
			"http", "127.0.0.1", srv.port(), "", "Host header evil.example:80 differs from the request's target " + self},
		{"mode none", Policy{}, connect(self),
			"connect", "127.0.0.1", srv.port(), "", "network mode is none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := startProxy(t, Config{}, tt.policy)
			resp, body := tp.dial(t, tp.httpAddr).do(t, tt.request)
			rule := tt.rule
			if rule == "" {
				rule = noRule
			}
			got := map[string]string{
				"status": resp.Status, "X-Airlock-Egress": resp.Header.Get("X-Airlock-Egress"),
				"X-Airlock-Egress-Rule": resp.Header.Get("X-Airlock-Egress-Rule"),
			}
			want := map[string]string{"status": "403 Forbidden", "X-Airlock-Egress": "denied", "X-Airlock-Egress-Rule": rule}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s\nbody: %s", diff, body)
			}
			// The answer says what to add to the allow list.
			entry := strconv.Quote(net.JoinHostPort(tt.host, strconv.Itoa(tt.port)))
			if hint := resp.Header.Get("X-Airlock-Egress-Allow"); !strings.Contains(hint, entry) {
				t.Errorf("X-Airlock-Egress-Allow = %q, want it to name %s", hint, entry)
			}
			wantEv := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: tt.proto, Host: tt.host, Port: tt.port,
				Decision: Denied, Rule: tt.rule, Reason: tt.reason, Status: http.StatusForbidden}}
			if diff := cmp.Diff(wantEv, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
	if n := srv.accepted(t); n != 0 {
		t.Errorf("refused target was connected to %d times", n)
	}
}

// SetRules applies to the next request, also on a connection kept alive
// from before.
func TestSetRules(t *testing.T) {
	srv := startTCP(t, rawHTTP("", func(*http.Request) string { return "ok" }, func(http.Header) {}))
	allow := allowlist(srv.addr())
	tp := startProxy(t, Config{}, allow)
	c := tp.dial(t, tp.httpAddr)
	if resp, _ := c.do(t, get(srv.addr())); resp.StatusCode != http.StatusOK {
		t.Fatalf("before SetRules: %s, want 200", resp.Status)
	}
	tp.sb.SetRules(mustCompile(t, Policy{}))
	if diff := cmp.Diff(Policy{Mode: ModeNone}, tp.sb.Rules().Policy()); diff != "" {
		t.Errorf("Rules().Policy() (-want +got):\n%s", diff)
	}
	if resp, _ := c.do(t, get(srv.addr())); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("after SetRules(none), same connection: %s, want 403", resp.Status)
	}
	tp.sb.SetRules(mustCompile(t, allow))
	if resp, _ := tp.dial(t, tp.httpAddr).do(t, get(srv.addr())); resp.StatusCode != http.StatusOK {
		t.Fatalf("after SetRules(allow) again: %s, want 200", resp.Status)
	}
	var got []string
	for _, e := range tp.waitLog(t, 3) {
		got = append(got, e.Decision)
	}
	if diff := cmp.Diff([]string{Allowed, Denied, Allowed}, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// TestBadRequests: what the proxy cannot read or will not carry as HTTP
// gets a 4xx and an event, and the connection is closed.
func TestBadRequests(t *testing.T) {
	tests := []struct {
		name    string
		request string
		status  int
		event   Event
	}{
		{"origin-form: the proxy is no web server", "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", http.StatusBadRequest,
			Event{Protocol: "http", Reason: "not a proxy request: want an absolute http:// URL or CONNECT"}},
		{"https in the URL", "GET https://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n", http.StatusBadRequest,
			Event{Protocol: "http", Reason: `scheme "https": use CONNECT for https and anything but http`}},
		{"two Host headers", "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nHost: pypi.org\r\n\r\n", http.StatusBadRequest,
			Event{Protocol: "http", Reason: "malformed request: too many Host headers"}},
		{"no Host header", "GET http://pypi.org/ HTTP/1.0\r\n\r\n", http.StatusBadRequest,
			Event{Protocol: "http", Reason: "want exactly one Host header, got 0"}},
		{"CONNECT without a port", "CONNECT pypi.org HTTP/1.1\r\nHost: pypi.org\r\n\r\n", http.StatusBadRequest,
			Event{Protocol: "connect", Reason: `bad CONNECT target: "pypi.org" has no port`}},
		{"head too large", "GET http://pypi.org/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxHead) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, Event{Protocol: "http", Reason: "request head too large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := startProxy(t, Config{}, allowlist("pypi.org"))
			c := tp.dial(t, tp.httpAddr)
			resp, _ := c.do(t, tt.request)
			if resp.StatusCode != tt.status || resp.Header.Get("X-Airlock-Egress") != "denied" {
				t.Errorf("answer %s (X-Airlock-Egress %q), want %d", resp.Status, resp.Header.Get("X-Airlock-Egress"), tt.status)
			}
			wantClosed(t, c, "after a bad request")
			want := tt.event
			want.SandboxID, want.TenantID, want.Decision, want.Status = "sb1", "tenant1", Denied, tt.status
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
