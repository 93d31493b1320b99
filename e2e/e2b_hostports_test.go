package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// hostDomain is the --e2b-domain of these tests. Nothing resolves it: a
// request names its host in the Host header and goes to the server's
// loopback address, as one through a wildcard DNS name would arrive.
const hostDomain = "e2b.test"

// hostServer runs in a sandbox on the port its argument names: it answers
// every request with what arrived (201, JSON), streams /stream (a line,
// then another once the file go-on exists) and switches /upgrade to a
// protocol that sends back every line upper-cased, as WebSocket switches.
const hostServer = `import http.server, json, os, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode()
        out = json.dumps({"method": self.command, "path": self.path, "body": body,
            "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def do_GET(self):
        if self.path == "/stream":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"one\n")
            self.wfile.flush()
            while not os.path.exists("/home/user/go-on"):
                time.sleep(0.05)
            self.wfile.write(b"two\n")
            return
        if self.path != "/upgrade":
            return self.answer()
        self.send_response(101)
        self.send_header("Upgrade", "shout")
        self.send_header("Connection", "Upgrade")
        self.end_headers()
        self.wfile.flush()
        for line in self.rfile:
            self.wfile.write(line.upper())
            self.wfile.flush()
        self.close_connection = True
    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = answer
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`

// e2bCreated is what the facade's create answers.
type e2bCreated struct {
	SandboxID          string  `json:"sandboxID"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken string  `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// e2bCreate creates a sandbox through the facade with key.
func e2bCreate(t *testing.T, s *server, key, body string) e2bCreated {
	t.Helper()
	code, out := callWith(t, s, "", "POST", "/e2b/v2/sandboxes", map[string]string{"X-API-Key": key, "Content-Type": "application/json"}, body)
	var sb e2bCreated
	if err := json.Unmarshal([]byte(out), &sb); err != nil || code != 201 || sb.SandboxID == "" {
		t.Fatalf("E2B create %s: %d %s", body, code, out)
	}
	return sb
}

// hostCall makes a request to s with Host host, as a client would whose
// DNS sent the host name to the server.
func hostCall(t *testing.T, s *server, method, host, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startHostServer runs hostServer on port 8000 of sandbox id, with c, and
// waits until it answers through the native port route.
func startHostServer(t *testing.T, s *server, c *client.Client, key, id string) {
	t.Helper()
	must[int64](t)(c.WriteFile(ctx, id, "srv.py", strings.NewReader(hostServer), 0o644))
	must[client.Process](t)(c.StartProcess(ctx, id, client.ExecRequest{Cmd: []string{"python3", "srv.py", "8000"}}, "web"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := callWith(t, s, key, "GET", "/v1/sandboxes/"+id+"/ports/8000/", nil, "")
		if code == 201 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server in %s never answered: %d %s", id, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// seenBy decodes what hostServer saw of a request.
func seenBy(t *testing.T, body string) (method, path string, headers map[string]string) {
	t.Helper()
	var got struct {
		Method, Path string
		Headers      map[string]string
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("not the sandbox server's answer: %s", body)
	}
	return got.Method, got.Path, got.Headers
}

// portRefusal decodes E2B's edge error body and checks its shape.
func portRefusal(t *testing.T, body, id string, code int) string {
	t.Helper()
	var e struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
		Code      int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != code || e.SandboxID != id || e.Message == "" {
		t.Errorf("error body %s: want E2B's {sandboxId: %q, message, code: %d}", body, id, code)
	}
	return e.Message
}

// TestE2BHostPorts: with --e2b-domain, PORT-ID.DOMAIN is that sandbox's
// port (streams and protocol upgrades too) and 49983-ID.DOMAIN its envd;
// at the facade's envd URL, E2b-Sandbox-Port does the same. Who passes:
// anyone to a sandbox the facade made with public traffic, the right
// traffic token to one made without, an Airlock credential of its tenant
// to any (and nothing else to a native one); no caller credential reaches
// the sandbox's server; the token still works after a restart.
func TestE2BHostPorts(t *testing.T) {
	s := startServer(t, "", "--e2b-domain", "E2B.test.")
	admin := s.admin()
	for _, name := range []string{"host-a", "host-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	keyA := must[client.NewKey](t)(admin.CreateKey(ctx, "host-a", "a")).Key
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "host-b", "b")).Key
	a := client.New(s.url, keyA)

	pub := e2bCreate(t, s, keyA, `{"templateID":"base"}`)
	priv := e2bCreate(t, s, keyA, `{"templateID":"base","network":{"allowPublicTraffic":false}}`)
	native := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{}))
	if pub.TrafficAccessToken != "" || priv.TrafficAccessToken == "" || priv.Domain == nil || *priv.Domain != hostDomain {
		t.Fatalf("create answered %+v and %+v: want a traffic token for the private one only, and domain %s", pub, priv, hostDomain)
	}
	for _, id := range []string{pub.SandboxID, priv.SandboxID, native.ID} {
		startHostServer(t, s, a, keyA, id)
	}
	host := func(port int, id string) string { return fmt.Sprintf("%d-%s.%s", port, id, hostDomain) }

	t.Run("public", func(t *testing.T) { hostPublic(t, s, pub.SandboxID, host(8000, pub.SandboxID)) })
	t.Run("traffic token", func(t *testing.T) { hostTrafficToken(t, s, priv, host(8000, priv.SandboxID)) })
	t.Run("native", func(t *testing.T) {
		tok := must[client.Token](t)(a.CreateToken(ctx, native.ID, time.Minute)).Token
		hostNative(t, s, native.ID, host(8000, native.ID), keyA, keyB, tok, priv.TrafficAccessToken)
	})
	t.Run("stream and upgrade", func(t *testing.T) { hostStream(t, s, a, pub.SandboxID, host(8000, pub.SandboxID)) })
	t.Run("envd", func(t *testing.T) { hostEnvd(t, s, priv, host(envdPort, priv.SandboxID)) })
	t.Run("sandbox url", func(t *testing.T) { sandboxURLPorts(t, s, priv) })
	t.Run("unknown and closed", func(t *testing.T) {
		if code, body := hostCall(t, s, "GET", host(8000, "sb-0000000000000000"), "/", nil); code != 404 {
			t.Errorf("an unknown sandbox: %d %s, want 404", code, body)
		} else {
			portRefusal(t, body, "sb-0000000000000000", 404)
		}
		if code, body := hostCall(t, s, "GET", host(8001, pub.SandboxID), "/", nil); code != 502 || !strings.Contains(body, "nothing listens on port 8001") {
			t.Errorf("a port nothing listens on: %d %s, want 502", code, body)
		}
		// Another domain is the server's own: its health check answers.
		if code, body := hostCall(t, s, "GET", "8000-"+pub.SandboxID+".other.test", "/healthz", nil); code != 200 {
			t.Errorf("a host outside the domain: %d %s, want the server's own /healthz", code, body)
		}
	})

	// The traffic token is derived, not stored: the same after a restart.
	restartServer(t, s, "SIGTERM", 200*time.Millisecond)
	h := host(8000, priv.SandboxID)
	if code, body := hostCall(t, s, "GET", h, "/after", map[string]string{"e2b-traffic-access-token": priv.TrafficAccessToken}); code != 201 {
		t.Errorf("after a restart, with the traffic token: %d %s", code, body)
	}
	if code, body := hostCall(t, s, "GET", h, "/after", nil); code != 403 {
		t.Errorf("after a restart, without the traffic token: %d %s, want 403", code, body)
	}
	code, out := callWith(t, s, "", "POST", "/e2b/sandboxes/"+priv.SandboxID+"/connect", map[string]string{"X-API-Key": keyA, "Content-Type": "application/json"}, `{}`)
	if !strings.Contains(out, `"trafficAccessToken":"`+priv.TrafficAccessToken+`"`) {
		t.Errorf("connect after a restart: %d %s, want the same traffic token", code, out)
	}
	// Deleted is gone: 404, as for any unknown sandbox.
	if err := a.DeleteSandbox(ctx, pub.SandboxID); err != nil {
		t.Fatal(err)
	}
	if code, body := hostCall(t, s, "GET", host(8000, pub.SandboxID), "/", nil); code != 404 {
		t.Errorf("a deleted sandbox: %d %s, want 404", code, body)
	}
}

// envdPort is envd's port in E2B's host names.
const envdPort = 49983

// leaked are the caller's credentials the sandbox's server must never see,
// sent with every request below.
var leaked = map[string]string{
	"X-Access-Token":           "alt_envd",
	"E2b-Traffic-Access-Token": "att_wrong",
	"Cookie":                   "airlock_session=secret; app=kept",
}

// hostPublic: anyone reaches a public sandbox's port; method, path and
// body arrive, credentials do not; Host is localhost:PORT as on Airlock's
// own port route.
func hostPublic(t *testing.T, s *server, id, host string) {
	hdr := map[string]string{"Authorization": "Bearer alk_not_a_key"}
	for k, v := range leaked {
		hdr[k] = v
	}
	for _, h := range []string{host, host + ":7070", strings.ToUpper(host) + "."} {
		code, body := hostCall(t, s, "DELETE", h, "/api/x%2Fy?q=1", hdr)
		if code != 201 {
			t.Fatalf("DELETE at %s: %d %s", h, code, body)
		}
		method, path, headers := seenBy(t, body)
		if method != "DELETE" || path != "/api/x%2Fy?q=1" || headers["host"] != "localhost:8000" || headers["cookie"] != "app=kept" {
			t.Errorf("the sandbox's server saw %s %s host %q cookie %q", method, path, headers["host"], headers["cookie"])
		}
		for _, k := range []string{"authorization", "x-access-token", "e2b-traffic-access-token", "e2b-sandbox-id", "e2b-sandbox-port"} {
			if v, ok := headers[k]; ok {
				t.Errorf("the sandbox's server saw %s: %q", k, v)
			}
		}
	}
}

// hostTrafficToken: a sandbox created without public traffic needs its
// traffic token: 403 without it or with another, in E2B's shape.
func hostTrafficToken(t *testing.T, s *server, sb e2bCreated, host string) {
	code, body := hostCall(t, s, "GET", host, "/", nil)
	if code != 403 || !strings.Contains(portRefusal(t, body, sb.SandboxID, 403), "is missing") {
		t.Errorf("without the traffic token: %d %s", code, body)
	}
	for _, wrong := range []string{"att_wrong", sb.TrafficAccessToken + "0", strings.ToUpper(sb.TrafficAccessToken), sb.EnvdAccessToken} {
		code, body := hostCall(t, s, "GET", host, "/", map[string]string{"e2b-traffic-access-token": wrong})
		if code != 403 || !strings.Contains(portRefusal(t, body, sb.SandboxID, 403), "invalid") {
			t.Errorf("with traffic token %q: %d %s", wrong, code, body)
		}
	}
	hdr := map[string]string{"Cookie": leaked["Cookie"], "X-Access-Token": sb.EnvdAccessToken, "e2b-traffic-access-token": sb.TrafficAccessToken}
	code, body = hostCall(t, s, "POST", host, "/in", hdr)
	if code != 201 {
		t.Fatalf("with the traffic token: %d %s", code, body)
	}
	if _, _, headers := seenBy(t, body); headers["e2b-traffic-access-token"] != "" || headers["x-access-token"] != "" || headers["cookie"] != "app=kept" {
		t.Errorf("the sandbox's server saw the caller's tokens: %v", headers)
	}
	// An Airlock credential of the sandbox passes too: its envd token is
	// the sandbox's own token.
	if code, body := hostCall(t, s, "GET", host, "/", map[string]string{"Authorization": "Bearer " + sb.EnvdAccessToken}); code != 201 {
		t.Errorf("with the sandbox's envd token as Authorization: %d %s", code, body)
	}
}

// hostNative: a sandbox made natively is not opened by --e2b-domain: an
// Airlock key of its tenant or its own token reaches it, nothing else.
func hostNative(t *testing.T, s *server, id, host, keyA, keyB, token, otherTraffic string) {
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		code int
	}{
		{"nothing", nil, 401},
		{"another sandbox's traffic token", map[string]string{"e2b-traffic-access-token": otherTraffic}, 401},
		{"a bad key", map[string]string{"Authorization": "Bearer alk_nope"}, 401},
		{"another tenant's key", map[string]string{"Authorization": "Bearer " + keyB}, 404},
		{"the tenant's key", map[string]string{"Authorization": "Bearer " + keyA}, 201},
		{"the sandbox's token", map[string]string{"Authorization": "Bearer " + token}, 201},
	} {
		code, body := hostCall(t, s, "GET", host, "/", tc.hdr)
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
			continue
		}
		if code == 201 {
			if _, _, headers := seenBy(t, body); headers["authorization"] != "" {
				t.Errorf("%s: the sandbox's server saw Authorization %q", tc.name, headers["authorization"])
			}
		} else {
			portRefusal(t, body, id, code)
		}
	}
}

// hostStream: a response streams through the host name as it is written
// (the second line is written only after the first was read), and a
// protocol upgrade becomes a two-way stream.
func hostStream(t *testing.T, s *server, c *client.Client, id, host string) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute) // a buffered stream would hang here
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", s.url+"/stream", nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("first line of the stream: %q %v", line, err)
	}
	must[int64](t)(c.WriteFile(ctx, id, "go-on", strings.NewReader(""), 0o644))
	if line, err := br.ReadString('\n'); err != nil || line != "two\n" {
		t.Fatalf("second line of the stream: %q %v", line, err)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "GET /upgrade HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n", host)
	cr := bufio.NewReader(conn)
	up, err := http.ReadResponse(cr, nil)
	if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the host name: %v %v", up, err)
	}
	for _, word := range []string{"hello\n", "again\n"} {
		fmt.Fprint(conn, word)
		if line, err := cr.ReadString('\n'); err != nil || line != strings.ToUpper(word) {
			t.Fatalf("after the upgrade sent %q, got %q %v", word, line, err)
		}
	}
}

// hostEnvd: 49983-ID.DOMAIN is the facade's envd for that sandbox, with
// its own token rule (X-Access-Token), E2b-Sandbox-Id taken from the host.
func hostEnvd(t *testing.T, s *server, sb e2bCreated, host string) {
	code, body := hostCall(t, s, "GET", host, "/files?path=srv.py", map[string]string{"X-Access-Token": sb.EnvdAccessToken})
	if code != 200 || body != hostServer {
		t.Errorf("envd files at %s: %d %.200s", host, code, body)
	}
	// The host names the sandbox, whatever the header says.
	code, body = hostCall(t, s, "GET", host, "/files?path=srv.py", map[string]string{"X-Access-Token": sb.EnvdAccessToken, "E2b-Sandbox-Id": "sb-0000000000000000"})
	if code != 200 {
		t.Errorf("envd files with another E2b-Sandbox-Id: %d %.200s", code, body)
	}
	if code, body := hostCall(t, s, "GET", host, "/files?path=srv.py", nil); code != 401 {
		t.Errorf("envd files without the envd token: %d %.200s, want 401", code, body)
	}
}

// sandboxURLPorts: with E2B_SANDBOX_URL set, an SDK sends port traffic to
// the facade's envd URL with E2b-Sandbox-Id and E2b-Sandbox-Port (the code
// interpreter's POST /execute to port 49999): the same port, same rules.
func sandboxURLPorts(t *testing.T, s *server, sb e2bCreated) {
	hdr := map[string]string{"E2b-Sandbox-Id": sb.SandboxID, "E2b-Sandbox-Port": "8000", "X-Access-Token": sb.EnvdAccessToken}
	code, body := callWith(t, s, "", "POST", "/e2b/envd/execute?x=1", hdr, `{"code":"1+1"}`)
	if code != 403 {
		t.Errorf("without the traffic token: %d %s, want 403", code, body)
	}
	hdr["E2B-Traffic-Access-Token"] = sb.TrafficAccessToken
	code, body = callWith(t, s, "", "POST", "/e2b/envd/execute?x=1", hdr, `{"code":"1+1"}`)
	if code != 201 {
		t.Fatalf("with the traffic token: %d %s", code, body)
	}
	method, path, headers := seenBy(t, body)
	if method != "POST" || path != "/execute?x=1" || headers["x-access-token"] != "" || headers["e2b-sandbox-port"] != "" {
		t.Errorf("the sandbox's server saw %s %s %v", method, path, headers)
	}
	// envd's own port is the facade's envd, as before.
	hdr["E2b-Sandbox-Port"] = fmt.Sprint(envdPort)
	if code, body := callWith(t, s, "", "GET", "/e2b/envd/files?path=srv.py", hdr, ""); code != 200 || body != hostServer {
		t.Errorf("envd through the sandbox URL: %d %.200s", code, body)
	}
}
