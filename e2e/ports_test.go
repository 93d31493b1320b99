package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// echoServer is a web server run inside the sandbox: it answers every
// request with what it received, as JSON.
const echoServer = `import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode()
        out = json.dumps({"method": self.command, "path": self.path, "body": body,
            "host": self.headers.get("Host"), "authorization": self.headers.get("Authorization"),
            "cookie": self.headers.get("Cookie")}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def do_GET(self):
        if self.path != "/upgrade":
            return self.answer()
        # A protocol switch: then every line sent comes back upper-cased.
        self.send_response(101)
        self.send_header("Upgrade", "shout")
        self.send_header("Connection", "Upgrade")
        self.end_headers()
        self.wfile.flush()
        for line in self.rfile:
            self.wfile.write(line.upper())
            self.wfile.flush()
        self.close_connection = True
    do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()
`

// TestPortProxy: a web server in a sandbox with no network is reached
// through /v1/sandboxes/{id}/ports/{port}/; path, query, method and body
// arrive as sent, the caller's credentials do not; the sandbox's token
// works, another tenant gets 404, a port nothing listens on 502.
func TestPortProxy(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{}))
	if _, err := admin.WriteFile(ctx, sb.ID, "echo.py", strings.NewReader(echoServer), 0o644); err != nil {
		t.Fatal(err)
	}
	// Started as a user would, from the CLI.
	if out, code := s.cli(s.adminKey, "exec", "--background", "--tag", "web", sb.ID, "--", "python3", "echo.py"); code != 0 {
		t.Fatalf("airlock exec --background: exit %d: %s", code, out)
	} else if procs := must[[]client.Process](t)(admin.ListProcesses(ctx, sb.ID)); len(procs) != 1 || fmt.Sprint(procs[0].Pid) != strings.TrimSpace(out) || procs[0].Tag != "web" {
		t.Fatalf("exec --background printed %q; processes %+v", out, procs)
	}
	base := "/v1/sandboxes/" + sb.ID + "/ports/8000"

	do := func(method, path, cred, body string, hdr map[string]string) (int, string) {
		t.Helper()
		return callWith(t, s, cred, method, path, hdr, body)
	}
	// The server takes a moment to start listening.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := do("GET", base+"/", s.adminKey, "", nil)
		if code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox's server never answered: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	code, body := do("POST", base+"/api/items?x=1&y=two%20words", s.adminKey, `{"a":1}`,
		map[string]string{"Cookie": "airlock_session=secret; app=kept", "Content-Type": "application/json"})
	var got map[string]*string
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 201 {
		t.Fatalf("POST through the proxy: %d %s", code, body)
	}
	str := func(p *string) string {
		if p == nil {
			return "<none>"
		}
		return *p
	}
	for k, want := range map[string]string{"method": "POST", "path": "/api/items?x=1&y=two%20words", "body": `{"a":1}`,
		"host": "localhost:8000", "authorization": "<none>", "cookie": "app=kept"} {
		if str(got[k]) != want {
			t.Errorf("the sandbox's server saw %s %q, want %q", k, str(got[k]), want)
		}
	}

	// A protocol upgrade (as WebSocket does) becomes a two-way stream.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/upgrade HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: shout\r\n\r\n", base, s.adminKey)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the proxy: %v %v", resp, err)
	}
	for _, word := range []string{"hello\n", "again\n"} {
		fmt.Fprint(conn, word)
		if line, err := br.ReadString('\n'); err != nil || line != strings.ToUpper(word) {
			t.Fatalf("after the upgrade sent %q, got %q %v", word, line, err)
		}
	}
	conn.Close()

	// The sandbox's own token reaches it; another tenant does not, nor a
	// port nothing listens on, nor a bad port.
	tok := must[client.Token](t)(admin.CreateToken(ctx, sb.ID, time.Minute))
	if code, body := do("DELETE", base+"/x", tok.Token, "", nil); code != 201 || !strings.Contains(body, `"DELETE"`) {
		t.Errorf("with the sandbox's token: %d %s", code, body)
	}
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "other"}))
	other := must[client.NewKey](t)(admin.CreateKey(ctx, "other", "")).Key
	for _, tc := range []struct {
		url, cred string
		code      int
		says      string
	}{
		{base + "/", other, 404, "not_found"},
		{base + "/", "", 401, "unauthenticated"},
		{"/v1/sandboxes/" + sb.ID + "/ports/8001/", s.adminKey, 502, "nothing listens on port 8001"},
		{"/v1/sandboxes/" + sb.ID + "/ports/0/", s.adminKey, 400, "invalid_argument"},
		{"/v1/sandboxes/" + sb.ID + "/ports/3128/", s.adminKey, 400, "egress proxy"},
		{"/v1/sandboxes/" + sb.ID + "/ports/80x/", s.adminKey, 400, "invalid_argument"},
	} {
		if code, body := do("GET", tc.url, tc.cred, "", nil); code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d %s, want %d %s", tc.url, code, body, tc.code, tc.says)
		}
	}
	if err := admin.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := do("GET", base+"/", s.adminKey, "", nil); code != 409 {
		t.Errorf("after the sandbox was deleted: %d %s, want 409", code, body)
	}
}
