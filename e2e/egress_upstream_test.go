package e2e

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// TestEgressUpstreamFailure: through a real server, an allowed target
// whose name does not resolve, or whose port refuses, is reported as an
// upstream failure over HTTP, CONNECT and SOCKS5 (header, body, SOCKS
// reply), logged "allowed" with upstream_error, and `airlock run` prints
// its own line for it rather than a denial.
func TestEgressUpstreamFailure(t *testing.T) {
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	c := s.admin()
	const nx = "nx.test"                 // NXDOMAIN in the fake internet
	refused := fakenet.AllowedIP + ":81" // nothing listens there
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Network: client.AllowOnly(nx, nx+":443", refused)}))
	t.Cleanup(func() { c.DeleteSandbox(ctx, sb.ID) })
	env := &egressEnv{t: t, n: n, s: s, c: c, sb: sb}
	head := "curl -sS -o /dev/null -D - --max-time 20 "
	tests := []struct {
		name, cmd string
		want      []string
	}{
		{"http, DNS", head + "http://" + nx + "/",
			[]string{"HTTP/1.1 502 Bad Gateway", "X-Airlock-Egress: upstream-error", "X-Airlock-Egress-Error: dns"}},
		{"connect, DNS", head + "https://" + nx + "/ 2>&1",
			[]string{"HTTP/1.1 502 Bad Gateway", "X-Airlock-Egress: upstream-error", "X-Airlock-Egress-Error: dns"}},
		{"http, refused", head + "http://" + refused + "/",
			[]string{"HTTP/1.1 502 Bad Gateway", "X-Airlock-Egress-Error: refused"}},
		{"http body", "curl -sS --max-time 20 http://" + nx + "/",
			[]string{"airlock egress: nx.test:80: DNS lookup failed: no such host"}},
		{"socks5, DNS", "curl -sS -o /dev/null --max-time 20 --socks5-hostname 127.0.0.1:1080 http://" + nx + "/ 2>&1",
			[]string{"connection to nx.test. (4)"}}, // reply 4: host unreachable
		{"socks5, refused", "curl -sS -o /dev/null --max-time 20 --socks5-hostname 127.0.0.1:1080 http://" + refused + "/ 2>&1",
			[]string{"(5)"}}, // reply 5: connection refused
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := env.sh(sb.ID, tt.cmd)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s: %q, want it to hold %q", tt.cmd, out, w)
				}
			}
		})
	}
	kinds := map[string]bool{}
	for _, ev := range env.loggedAtLeast(sb.ID, nx, 3) {
		if ev.Decision != "allowed" || ev.UpstreamError != "dns" || !strings.Contains(ev.Reason, "DNS lookup failed") {
			t.Errorf("logged %+v, want allowed with upstream_error dns", ev)
		}
		kinds[ev.Protocol] = true
	}
	for _, p := range []string{"http", "connect", "socks5"} {
		if !kinds[p] {
			t.Errorf("no %s event for %s", p, nx)
		}
	}
	for _, ev := range env.loggedAtLeast(sb.ID, fakenet.AllowedIP, 2) {
		if ev.Decision != "allowed" || ev.UpstreamError != "refused" {
			t.Errorf("logged %+v, want allowed with upstream_error refused", ev)
		}
	}
	// `airlock run` through the server says which side failed.
	out, _ := s.cli(s.adminKey, "run", "--allow", nx, "--", "sh", "-c", "curl -s -o /dev/null http://"+nx+"/; true")
	if want := "airlock: egress to nx.test:80 failed upstream: DNS lookup failed: no such host (the allow-list allowed it)"; !strings.Contains(out, want) || strings.Contains(out, "egress denied") {
		t.Errorf("airlock run: %q, want the line %q", out, want)
	}
}
