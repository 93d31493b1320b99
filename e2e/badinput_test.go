package e2e

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestBadInput: each request is refused with a 4xx and a message, and the
// sandbox and host are unchanged afterwards.
func TestBadInput(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	id := sb.ID
	big := `{"command":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, tc := range []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"malformed json", "POST", "/v1/sandboxes", "application/json", `{"cpus":`, 400},
		{"unknown field", "POST", "/v1/sandboxes", "application/json", `{"cpu":1}`, 400},
		{"unknown template", "POST", "/v1/sandboxes", "application/json", `{"template":"nope"}`, 404},
		{"negative memory", "POST", "/v1/sandboxes", "application/json", `{"memory_mb":-1}`, 400},
		{"absurd memory", "POST", "/v1/sandboxes", "application/json", `{"memory_mb":99999999}`, 400},
		{"more memory than the host", "POST", "/v1/sandboxes", "application/json", `{"memory_mb":8388608}`, 429},
		{"absurd pids", "POST", "/v1/sandboxes", "application/json", `{"pids":1000000000000}`, 400},
		{"absurd cpus", "POST", "/v1/sandboxes", "application/json", `{"cpus":512}`, 429},
		{"timeout too long", "POST", "/v1/sandboxes", "application/json", `{"timeout_s":999999}`, 400},
		{"wrong content type", "POST", "/v1/sandboxes", "text/plain", `{}`, 415},
		{"timeout 0", "POST", "/v1/sandboxes/" + id + "/timeout", "application/json", `{"timeout_s":0}`, 400},
		{"timeout beyond max", "POST", "/v1/sandboxes/" + id + "/timeout", "application/json", `{"timeout_s":100000000}`, 400},
		{"empty command", "POST", "/v1/sandboxes/" + id + "/exec", "application/json", `{"command":""}`, 400},
		{"cmd and command", "POST", "/v1/sandboxes/" + id + "/exec", "application/json", `{"cmd":["true"],"command":"true"}`, 400},
		{"oversized body", "POST", "/v1/sandboxes/" + id + "/exec", "application/json", big, 413},
		{"NUL in path", "GET", "/v1/sandboxes/" + id + "/files?path=a%00b", "", "", 400},
		{"missing path", "GET", "/v1/sandboxes/" + id + "/files", "", "", 400},
		{"bad mode", "PUT", "/v1/sandboxes/" + id + "/files?path=x&mode=999", "application/octet-stream", "x", 400},
		{"write outside workspace", "PUT", "/v1/sandboxes/" + id + "/files?path=/etc/passwd", "application/octet-stream", "x", 400},
		{"traversal write", "PUT", "/v1/sandboxes/" + id + "/files?path=../../usr/bin/evil", "application/octet-stream", "x", 400},
		{"bad ttl", "POST", "/v1/sandboxes/" + id + "/tokens", "application/json", `{"ttl_s":-5}`, 400},
		{"bad limit", "GET", "/v1/sandboxes?limit=-1", "", "", 400},
		{"unknown sandbox", "GET", "/v1/sandboxes/sb-0000000000000000", "", "", 404},
	} {
		code, body := call(t, s, s.adminKey, tc.method, tc.path, tc.ctype, tc.body)
		if code != tc.want || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %.200s, want %d with a message", tc.name, code, body, tc.want)
		}
	}
	// Traversal reads stay inside: ../../etc/passwd is the sandbox's own.
	code, body := call(t, s, s.adminKey, "GET", "/v1/sandboxes/"+id+"/files?path=../../etc/passwd", "", "")
	if code != 200 || !strings.Contains(body, "user:x:1000") {
		t.Errorf("traversal read: %d %.100s", code, body)
	}
	// The sandbox is unchanged and still works.
	res := must[client.ExecResult](t)(c.Exec(ctx, id, client.ExecRequest{Command: "ls -A /home/user | wc -l; test -e /usr/bin/evil || echo clean"}))
	if res.Stdout != "0\nclean\n" {
		t.Errorf("sandbox changed: %q", res.Stdout)
	}
	if page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{})); len(page.Sandboxes) != 1 {
		t.Errorf("bad creates left sandboxes: %d", len(page.Sandboxes))
	}
}
