package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// egressEnv is a daemon whose proxy resolves through a fake internet, and
// a sandbox allowed to reach some of it.
type egressEnv struct {
	t   *testing.T
	n   *fakenet.Net
	s   *server
	c   *client.Client
	sb  client.Sandbox
	api string // the daemon's host:port, a host service on 127.0.0.1
}

// allowList names every fake host the address checks must still stop:
// loop.test, meta.test, rebind.test and private.test are allowed by name.
var allowList = []string{fakenet.AllowedName, fakenet.RebindName, fakenet.LoopName, fakenet.MetaName,
	fakenet.PrivateName, "www.allowed.test:443"}

func startEgress(t *testing.T) *egressEnv {
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Network: client.AllowOnly(allowList...)}))
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	e := &egressEnv{t: t, n: n, s: s, c: c, sb: sb, api: u.Host}
	probe, err := os.ReadFile("testdata/netprobe.py")
	if err != nil {
		t.Fatal(err)
	}
	must[int64](t)(c.WriteFile(ctx, sb.ID, "netprobe.py", bytes.NewReader(probe), 0o644))
	must[int64](t)(c.WriteFile(ctx, sb.ID, "ca.pem", bytes.NewReader(n.CAPEM), 0o644))
	return e
}

// sh runs a shell command in the sandbox and returns its stdout, trimmed.
func (e *egressEnv) sh(id, cmd string) (string, int) {
	e.t.Helper()
	res := must[client.ExecResult](e.t)(e.c.Exec(ctx, id, client.ExecRequest{Command: cmd, Timeout: time.Minute}))
	return strings.TrimSpace(res.Stdout), res.ExitCode
}

func (e *egressEnv) probe(args ...string) string {
	e.t.Helper()
	out, code := e.sh(e.sb.ID, "python3 netprobe.py "+strings.Join(args, " "))
	if code != 0 {
		e.t.Fatalf("netprobe %v: exit %d: %s", args, code, out)
	}
	return out
}

// logged returns the log entries of the sandbox about host.
func (e *egressEnv) logged(id, host string) []client.NetEvent {
	e.t.Helper()
	var out []client.NetEvent
	for _, ev := range must[[]client.NetEvent](e.t)(e.c.NetworkLog(ctx, id, 0, 0)) {
		if ev.Host == host {
			out = append(out, ev)
		}
	}
	return out
}

// loggedAtLeast is logged once it has n entries, or after 10 s: the proxy
// logs a connection when it closes, which may come just after the client
// process has exited.
func (e *egressEnv) loggedAtLeast(id, host string, n int) []client.NetEvent {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := e.logged(id, host)
		if len(l) >= n || time.Now().After(deadline) {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertDenied checks the newest log entry about host is a denial.
func (e *egressEnv) assertDenied(id, host string) {
	e.t.Helper()
	evs := e.logged(id, host)
	if len(evs) == 0 {
		e.t.Errorf("no log entry for %s", host)
		return
	}
	if last := evs[len(evs)-1]; last.Decision != "denied" || last.Reason == "" {
		e.t.Errorf("log entry for %s: %+v, want a denial with a reason", host, last)
	}
}

func TestEgressAllowed(t *testing.T) {
	e := startEgress(t)
	curl := "curl -sS --max-time 20 --cacert ca.pem "
	for _, tc := range []struct{ name, cmd, want string }{
		{"https", curl + "https://allowed.test/", "hello from allowed.test"},
		{"http", curl + "http://allowed.test/", "hello from allowed.test"},
		{"socks5", curl + "--socks5-hostname 127.0.0.1:1080 http://allowed.test/", "hello from allowed.test"},
		{"env ALL_PROXY", "env -u HTTP_PROXY -u http_proxy " + curl + "http://allowed.test/", "hello from allowed.test"},
		{"pip-style urllib", "python3 netprobe.py urllib http://allowed.test/", "hello from allowed.test"},
		{"explicit port", curl + "https://www.allowed.test/", "hello from allowed.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, code := e.sh(e.sb.ID, tc.cmd); code != 0 || out != tc.want {
				t.Errorf("%s: exit %d, %q; want %q", tc.cmd, code, out, tc.want)
			}
		})
	}
	// git honours the proxy variables too: the fake server is no git
	// server, but the request must get there through the proxy.
	hits := e.n.Hits(fakenet.AllowedIP + ":80")
	e.sh(e.sb.ID, "GIT_TERMINAL_PROMPT=0 git ls-remote http://allowed.test/repo.git")
	if e.n.Hits(fakenet.AllowedIP+":80") == hits {
		t.Errorf("git ls-remote did not reach allowed.test through the proxy")
	}
	evs := e.logged(e.sb.ID, fakenet.AllowedName)
	if len(evs) == 0 {
		t.Fatal("no log entries for allowed.test")
	}
	for _, ev := range evs {
		if ev.Decision != "allowed" || ev.Rule == "" || ev.BytesDown == 0 || ev.Addr == "" {
			t.Errorf("allowed entry: %+v", ev)
		}
	}
}

func TestEgressDenied(t *testing.T) {
	e := startEgress(t)
	curlCode := func(url string) string {
		out, _ := e.sh(e.sb.ID, "curl -s -o /dev/null -w '%{http_code}' --max-time 20 "+url)
		return out
	}
	for _, tc := range []struct{ name, url, host string }{
		{"denied name", "http://denied.test/", fakenet.DeniedName},
		{"allowed name, other port", "http://allowed.test:8080/", fakenet.AllowedName},
		{"loopback by name", "http://loop.test/", fakenet.LoopName},
		{"metadata by name", "http://meta.test/latest/meta-data/", fakenet.MetaName},
		{"private by name", "http://private.test/", fakenet.PrivateName},
		{"never-allowed name", "http://exfil-c2VjcmV0.test/", "exfil-c2vjcmv0.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := curlCode(tc.url); code != "403" {
				t.Errorf("%s: HTTP %s, want 403 from the proxy", tc.url, code)
			}
			e.assertDenied(e.sb.ID, tc.host)
		})
	}
	t.Run("https to denied name", func(t *testing.T) {
		if out, code := e.sh(e.sb.ID, "curl -sS --max-time 20 --cacert ca.pem https://denied.test/ 2>&1"); code == 0 || !strings.Contains(out, "403") {
			t.Errorf("exit %d: %s", code, out)
		}
		e.assertDenied(e.sb.ID, fakenet.DeniedName)
	})
	t.Run("rebind", func(t *testing.T) {
		// The first answer is public (allowed); the next is 127.0.0.1, and
		// the proxy must check the address it dials, not an earlier one.
		curlCode("http://rebind.test/")
		if code := curlCode("http://rebind.test/"); code != "403" {
			t.Errorf("second request to rebind.test: HTTP %s, want 403", code)
		}
		e.assertDenied(e.sb.ID, fakenet.RebindName)
	})
	// IP literals in every spelling are IPs, and IPs need an IP rule.
	for _, lit := range []struct{ target, host string }{
		{"127.0.0.1:80", "127.0.0.1"}, {"2130706433:80", "127.0.0.1"}, {"0x7f000001:80", "127.0.0.1"},
		{"0177.0.0.1:80", "127.0.0.1"}, {"127.1:80", "127.0.0.1"}, {"[::ffff:127.0.0.1]:80", "127.0.0.1"},
		{"0.0.0.0:80", "0.0.0.0"}, {"[::]:80", "::"}, {"[::1]:80", "::1"},
		{"169.254.169.254:80", "169.254.169.254"}, {"203.0.113.20:80", "203.0.113.20"},
		{"3405803796:80", "203.0.113.20"}, {"0xcb.0.0x71.024:80", "203.0.113.20"},
		{e.api, "127.0.0.1"}, // the daemon itself, a host service on loopback
	} {
		t.Run("literal "+lit.target, func(t *testing.T) {
			if out := e.probe("connect", lit.target); !strings.Contains(out, " 403 ") {
				t.Errorf("CONNECT %s: %q, want 403", lit.target, out)
			}
			e.assertDenied(e.sb.ID, lit.host)
		})
	}
	t.Run("SNI differs from CONNECT", func(t *testing.T) {
		if out := e.probe("sni", "allowed.test:443", "allowed.test", "ca.pem"); !strings.HasPrefix(out, "ok HTTP/1.1 200") {
			t.Fatalf("control, same SNI: %q", out)
		}
		if out := e.probe("sni", "allowed.test:443", "denied.test", "ca.pem"); !strings.HasPrefix(out, "fail") {
			t.Errorf("SNI denied.test through CONNECT allowed.test: %q", out)
		}
		e.assertDenied(e.sb.ID, fakenet.AllowedName)
	})
	t.Run("Host header differs", func(t *testing.T) {
		if out := e.probe("get", "http://allowed.test/", "denied.test"); !strings.Contains(out, " 403 ") {
			t.Errorf("%q, want 403", out)
		}
		e.assertDenied(e.sb.ID, fakenet.AllowedName)
	})
	t.Run("websocket upgrade to denied name", func(t *testing.T) {
		if out := e.probe("get", "http://denied.test/", "denied.test", "upgrade"); !strings.Contains(out, " 403 ") {
			t.Errorf("%q, want 403", out)
		}
		if out := e.probe("get", "http://allowed.test/", "allowed.test", "upgrade"); !strings.Contains(out, " 101 ") {
			t.Errorf("control, upgrade to allowed.test: %q, want 101", out)
		}
	})
	// Nothing denied was ever reached or looked up.
	for _, addr := range []string{fakenet.DeniedIP + ":80", fakenet.DeniedIP + ":443", fakenet.MetaIP + ":80",
		fakenet.PrivateIP + ":80", fakenet.AllowedIP + ":8080"} {
		if n := e.n.Hits(addr); n != 0 {
			t.Errorf("%s was reached %d times", addr, n)
		}
	}
	if n := e.n.Hits(fakenet.RebindIP + ":80"); n > 1 {
		t.Errorf("rebind.test's public address reached %d times, want at most 1", n)
	}
	for _, name := range []string{fakenet.DeniedName, "exfil-c2vjcmv0.test"} {
		if n := e.n.Queries(name); n != 0 {
			t.Errorf("%s was looked up %d times", name, n)
		}
	}
}

func TestEgressNoProxy(t *testing.T) {
	e := startEgress(t)
	// Without the proxy there is no way out at all.
	for _, args := range [][]string{
		{"tcp", fakenet.AllowedIP, "80"}, {"tcp", fakenet.DNSIP, "53"}, {"udp", fakenet.DNSIP},
		{"icmp", fakenet.AllowedIP}, {"tcp", e.n.HostIP.String(), "80"},
	} {
		if out := e.probe(args...); !strings.HasPrefix(out, "fail") {
			t.Errorf("%v: %q, want a failure", args, out)
		}
	}
	out, code := e.sh(e.sb.ID, "env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://allowed.test/ 2>&1")
	if code == 0 {
		t.Errorf("curl without proxy variables reached out: %s", out)
	}
	if out, code := e.sh(e.sb.ID, "getent hosts denied.test"); code == 0 {
		t.Errorf("the sandbox resolved denied.test: %s", out)
	}
	if n := e.n.Queries(fakenet.DeniedName); n != 0 {
		t.Errorf("denied.test was looked up %d times", n)
	}
}

func TestEgressLivePolicyAndIsolation(t *testing.T) {
	e := startEgress(t)
	curl := "curl -s -o /dev/null -w '%{http_code}' --max-time 20 "
	if out, _ := e.sh(e.sb.ID, curl+"http://denied.test/"); out != "403" {
		t.Fatalf("before: %s", out)
	}
	// Another sandbox with the opposite policy.
	other := must[client.Sandbox](t)(e.c.CreateSandbox(ctx, client.CreateRequest{Network: client.AllowOnly(fakenet.DeniedName)}))
	if out, _ := e.sh(other.ID, curl+"http://denied.test/"); out != "200" {
		t.Errorf("other sandbox to its allowed host: %s", out)
	}
	if out, _ := e.sh(other.ID, curl+"http://allowed.test/"); out != "403" {
		t.Errorf("other sandbox to the first one's host: %s, want 403", out)
	}
	if evs := e.logged(e.sb.ID, fakenet.DeniedName); len(evs) != 1 {
		t.Errorf("the first sandbox's log holds the other's traffic: %+v", evs)
	}
	// A sandbox without a policy has no proxy to reach, its own or another's.
	none := must[client.Sandbox](t)(e.c.CreateSandbox(ctx, client.CreateRequest{}))
	if out, code := e.sh(none.ID, "curl -sS --max-time 5 -x http://127.0.0.1:3128 http://allowed.test/ 2>&1"); code == 0 {
		t.Errorf("a sandbox without network reached a proxy: %s", out)
	}

	// Live change: new connections follow the new policy.
	p := must[client.NetworkPolicy](t)(e.c.SetNetwork(ctx, e.sb.ID, client.NetworkPolicy{Mode: "allowlist",
		Allow: append(append([]string{}, allowList...), fakenet.DeniedName), Deny: []string{fakenet.AllowedName}}))
	if len(p.Deny) != 1 {
		t.Errorf("policy after PUT: %+v", p)
	}
	if out, _ := e.sh(e.sb.ID, curl+"http://denied.test/"); out != "200" {
		t.Errorf("after allowing denied.test: %s", out)
	}
	if out, _ := e.sh(e.sb.ID, curl+"http://allowed.test/"); out != "403" {
		t.Errorf("after denying allowed.test: %s, want 403 (deny wins)", out)
	}
	// Back to none: everything is refused, and said so.
	must[client.NetworkPolicy](t)(e.c.SetNetwork(ctx, e.sb.ID, client.NetworkPolicy{Mode: "none"}))
	if out, _ := e.sh(e.sb.ID, curl+"http://denied.test/"); out != "403" {
		t.Errorf("after mode none: %s, want 403", out)
	}
	got := must[client.NetworkPolicy](t)(e.c.GetNetwork(ctx, e.sb.ID))
	if got.Mode != "none" {
		t.Errorf("GET after PUT none: %+v", got)
	}
	// The log outlives the sandbox.
	if err := e.c.DeleteSandbox(ctx, e.sb.ID); err != nil {
		t.Fatal(err)
	}
	if evs := e.logged(e.sb.ID, fakenet.DeniedName); len(evs) < 3 {
		t.Errorf("log after delete: %d entries for denied.test", len(evs))
	}
	for _, id := range []string{other.ID, none.ID} {
		e.c.DeleteSandbox(ctx, id)
	}
	assertNoSandboxesLeft(t, e.s, e.sb.ID, other.ID, none.ID)
}

// TestEgressBadPolicy: invalid entries are refused with the entry named,
// and nothing is created.
func TestEgressBadPolicy(t *testing.T) {
	s := startServer(t, "")
	for _, tc := range []struct {
		p    client.NetworkPolicy
		want string
	}{
		{client.NetworkPolicy{Mode: "allowlist", Allow: []string{"ok.test", "*"}}, "allow[1]"},
		{client.NetworkPolicy{Mode: "allowlist", Allow: []string{"ok.test:99999"}}, "allow[0]"},
		{client.NetworkPolicy{Mode: "allowlist", Deny: []string{"10.0.0.1/8"}}, "deny[0]"},
		{client.NetworkPolicy{Mode: "open"}, "mode"},
	} {
		code, body := call(t, s, s.adminKey, "POST", "/v1/sandboxes", "application/json",
			fmt.Sprintf(`{"network":{"mode":%q,"allow":%s,"deny":%s}}`, tc.p.Mode, jsonList(tc.p.Allow), jsonList(tc.p.Deny)))
		if code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%+v: %d %s, want 400 naming %s", tc.p, code, body, tc.want)
		}
	}
	if page := must[client.Page](t)(s.admin().ListSandboxes(ctx, client.ListOptions{})); len(page.Sandboxes) != 0 {
		t.Errorf("bad policies created sandboxes: %+v", page.Sandboxes)
	}
}

func jsonList(l []string) string {
	if l == nil {
		return "[]"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// A sandbox that survives a daemon crash gets its proxy back.
func TestEgressSurvivesRestart(t *testing.T) {
	e := startEgress(t)
	curl := "curl -s -o /dev/null -w '%{http_code}' --max-time 20 "
	if out, _ := e.sh(e.sb.ID, curl+"http://allowed.test/"); out != "200" {
		t.Fatalf("before the crash: %s", out)
	}
	// Read back (which flushes the log writer) until the connection is
	// logged: the proxy records it when it closes, which may come just
	// after curl's exit; events still queued when the daemon dies are
	// lost, and this test is about the proxy.
	if len(e.loggedAtLeast(e.sb.ID, fakenet.AllowedName, 1)) == 0 {
		t.Fatal("the connection before the crash was never logged")
	}
	e.s.cmd.Process.Kill()
	e.s.cmd.Wait()
	e.s.cmd = nil
	e.s.start()
	e.c = e.s.admin()
	if out, _ := e.sh(e.sb.ID, curl+"http://allowed.test/"); out != "200" {
		t.Errorf("after the restart: %s", out)
	}
	if out, _ := e.sh(e.sb.ID, curl+"http://denied.test/"); out != "403" {
		t.Errorf("after the restart, denied.test: %s", out)
	}
	if n := len(e.loggedAtLeast(e.sb.ID, fakenet.AllowedName, 2)); n != 2 {
		t.Errorf("%d log entries for allowed.test across the restart, want 2", n)
	}
}

// holdTunnel is a program run in a sandbox: it opens a CONNECT tunnel
// through the sandbox's proxy to allowed.test:80, makes one request in it
// and keeps it open.
const holdTunnel = `import os, socket, time, urllib.parse
u = urllib.parse.urlparse(os.environ["HTTP_PROXY"])
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode(), flush=True)
s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
print(s.recv(1000).split(b"\r\n")[0].decode(), flush=True)
time.sleep(600)
`

// TestConnectionsCutByRestart: connections the daemon carries when it is
// killed or stopped (a tunnel through the egress proxy, a stream into a
// sandbox's port) are cut, and logged as cut: by the stopping daemon, or
// by the next one for a daemon that could not say. New ones work as soon
// as the daemon is back.
func TestConnectionsCutByRestart(t *testing.T) {
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			e := startEgress(t)
			id := e.sb.ID
			must[int64](t)(e.c.WriteFile(ctx, id, "hold.py", strings.NewReader(holdTunnel), 0o644))
			must[int64](t)(e.c.WriteFile(ctx, id, "echo.py", strings.NewReader(echoServer), 0o644))
			hold := must[client.Process](t)(e.c.StartProcess(ctx, id, client.ExecRequest{Command: "python3 hold.py"}, "hold"))
			must[client.Process](t)(e.c.StartProcess(ctx, id, client.ExecRequest{Command: "python3 echo.py"}, "web"))
			waitFor(t, e.c, id, hold.Pid, "HTTP/1.1 200 Connection established\nHTTP/1.1 200")
			stream := openShout(t, e.s, id)
			restartServer(t, e.s, how, time.Second)
			e.c = e.s.admin()

			var cut []client.NetEvent
			for _, ev := range e.loggedAtLeast(id, fakenet.AllowedName, 1) {
				if ev.Cut {
					cut = append(cut, ev)
				}
			}
			wantReason := "cut: the proxy stopped"
			if how == "kill -9" {
				wantReason = "cut: the daemon went away"
			}
			if len(cut) != 1 || cut[0].Protocol != "connect" || cut[0].Decision != "allowed" || !strings.HasPrefix(cut[0].Reason, wantReason) {
				t.Errorf("network log entries of the cut tunnel: %+v, want one connect, allowed, %q", cut, wantReason)
			}
			// The stream into the port was cut too, and its audit event
			// says so.
			stream.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := stream.Read(make([]byte, 1)); err == nil {
				t.Error("the stream into the sandbox's port is still open after the restart")
			}
			var ports []map[string]any
			for _, ev := range must[[]client.AuditEvent](t)(e.c.AuditEvents(ctx, id, client.AuditQuery{Types: []string{"port.connection"}})) {
				var d map[string]any
				json.Unmarshal(ev.Data, &d)
				ports = append(ports, d)
			}
			if len(ports) != 1 || ports[0]["port"] != float64(8000) || ports[0]["cut"] != true || !strings.HasPrefix(fmt.Sprint(ports[0]["reason"]), "cut: ") {
				t.Errorf("port.connection events: %+v, want one for port 8000, cut", ports)
			}
			// New connections work at once.
			curl := "curl -s -o /dev/null -w '%{http_code}' --max-time 20 "
			if out, _ := e.sh(id, curl+"http://allowed.test/"); out != "200" {
				t.Errorf("a new connection after the restart: %s", out)
			}
			openShout(t, e.s, id).Close()
			if v := must[client.AuditVerify](t)(e.c.VerifyAudit(ctx, id)); !v.OK {
				t.Errorf("audit chain: %+v", v)
			}
		})
	}
}

// openShout opens a stream into port 8000 of a sandbox running echo.py,
// through the port proxy, and checks it echoes.
func openShout(t *testing.T, s *server, id string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var resp *http.Response
	br := bufio.NewReader(conn)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fmt.Fprintf(conn, "GET /v1/sandboxes/%s/ports/8000/upgrade HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n", id, s.adminKey)
		resp, err = http.ReadResponse(br, nil)
		if err == nil && resp.StatusCode == http.StatusSwitchingProtocols || time.Now().After(deadline) {
			break
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the port proxy: %v %v", resp, err)
	}
	fmt.Fprint(conn, "hello\n")
	if line, err := br.ReadString('\n'); err != nil || line != "HELLO\n" {
		t.Fatalf("the stream echoed %q, %v", line, err)
	}
	return conn
}
