package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// mcpHTTPAuth: no key or a bad one gets 401 and no session; a session id is
// no credential for another key; a rebound Host is refused. The same holds
// for 2026-07-28 requests, which are served without a session at all.
func mcpHTTPAuth(t *testing.T, url, keyA, keyB string) {
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(key, session, host, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, key := range []string{"", "alk_unknown"} {
		if resp := post(key, "", "", initBody); resp.StatusCode != 401 || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("initialize with key %q: %s, session %q; want 401 and none", key, resp.Status, resp.Header.Get("Mcp-Session-Id"))
		}
	}
	resp := post(keyA, "", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize with a good key: %s, session %q", resp.Status, sid)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := post(keyB, sid, "", list); resp.StatusCode/100 == 2 {
		t.Errorf("tenant B used tenant A's session id: %s", resp.Status)
	}
	if resp := post(keyA, "", "evil.example:80", initBody); resp.StatusCode != 403 {
		t.Errorf("initialize with a rebound Host: %s, want 403", resp.Status)
	}

	modern := func(key, host string) *http.Response {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := modern(keyA, ""); resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("tools/list at 2026-07-28: %s, session %q; want 200 and none", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	for _, key := range []string{"", "alk_unknown"} {
		if resp := modern(key, ""); resp.StatusCode != 401 {
			t.Errorf("tools/list at 2026-07-28 with key %q: %s, want 401", key, resp.Status)
		}
	}
	if resp := modern(keyA, "evil.example:80"); resp.StatusCode != 403 {
		t.Errorf("tools/list at 2026-07-28 with a rebound Host: %s, want 403", resp.Status)
	}
}

// mcpVerb fails clearly when the binary has no mcp verb, rather than with
// a protocol error from whatever it printed.
func mcpVerb(t *testing.T, bin string) {
	t.Helper()
	if out, err := exec.Command(bin, "mcp", "-h").CombinedOutput(); err != nil {
		t.Fatalf("airlock mcp -h: %v (is the mcp case in cmd/airlock/main.go's switch?)\n%s", err, out)
	}
}

// TestMCPEmbedded: `airlock mcp` with no server at $AIRLOCK_URL runs a
// daemon of its own (on its data dir, with its admin key) and serves the
// same tools; ending the harness's stdin ends it and its sandboxes stay
// in its data dir for the next start.
func TestMCPEmbedded(t *testing.T) {
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
	mcpVerb(t, bin)
	dir := linuxtest.StateDir(t)
	t.Cleanup(func() {
		if rt, err := linux.New(linux.Config{StateDir: dir, Binary: linuxtest.Init(t)}); err != nil {
			t.Errorf("runtime for cleanup: %v", err)
		} else if err := rt.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	cmd := exec.Command(bin, "mcp", "--data-dir", dir)
	// Port 1 on loopback: nothing listens there.
	cmd.Env = append(os.Environ(), "AIRLOCK_URL=http://127.0.0.1:1", "AIRLOCK_API_KEY=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs := mcpConnect(t, &mcpsdk.CommandTransport{Command: cmd}, nil)
	id := mcpCreate(t, cs, map[string]any{"timeout_s": 60})
	if r := mcpCall[mcpRun](t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo embedded"}); r.Stdout != "embedded\n" {
		t.Errorf("run_command: %+v", r)
	}
	mcpCall[any](t, cs, "sandbox_destroy", map[string]any{"sandbox_id": id})
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "starting an embedded one") {
		t.Errorf("stderr does not say it embedded a daemon:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.key")); err != nil {
		t.Errorf("the embedded daemon's data dir: %v", err)
	}
}
