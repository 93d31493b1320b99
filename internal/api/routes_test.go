package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tenancy"
)

func TestHealthAndOpenAPI(t *testing.T) {
	e := newEnv(t)
	var h map[string]string
	e.must(call{method: "GET", path: "/healthz"}, 200, &h)
	if h["status"] != "ok" {
		t.Errorf("healthz: %v", h)
	}
	a := e.must(call{method: "GET", path: "/v1/openapi.json"}, 200, nil)
	if string(a.body) != string(openAPIDoc) || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("openapi.json served as %q, %d bytes", a.header.Get("Content-Type"), len(a.body))
	}
}

func TestSandboxRoutes(t *testing.T) {
	e := newEnv(t)
	var sb sandboxJSON
	a := e.must(call{method: "POST", path: "/v1/sandboxes", cred: e.alice,
		body: `{"template":"py","memory_mb":1024,"metadata":{"run":"r1"}}`}, 201, &sb)
	want := sandboxJSON{
		ID: "sb_001", State: "running", Template: "py", CreatedAt: t0, ExpiresAt: t0.Add(300 * time.Second),
		Limits: limitsJSON{CPUs: 1, MemoryMB: 1024, Pids: 256, DiskMB: 1024}, Metadata: map[string]string{"run": "r1"},
		Workdir: "/home/user", Network: networkJSON{Mode: "none", Allow: []string{}, Deny: []string{}}, Node: "local",
		Lifecycle: &sandbox.Lifecycle{IdleAction: "destroy", MaxPausedS: 7 * 24 * 3600, Volumes: []sandbox.VolumeMount{}},
	}
	if d := cmp.Diff(want, sb); d != "" {
		t.Errorf("create (-want +got):\n%s", d)
	}
	if a.header.Get("Location") != "/v1/sandboxes/sb_001" {
		t.Errorf("Location %q", a.header.Get("Location"))
	}
	// No body at all takes every default.
	e.must(call{method: "POST", path: "/v1/sandboxes", cred: e.alice}, 201, nil)
	e.must(call{method: "POST", path: "/v1/sandboxes", cred: e.alice, body: `{"metadata":{"run":"r2"}}`}, 201, nil)
	e.sandbox(e.bob)

	// The JSON keys are exactly those of API.md: no tenant id, no env.
	var raw map[string]any
	e.must(call{method: "GET", path: "/v1/sandboxes/sb_001", cred: e.alice}, 200, &raw)
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	if d := cmp.Diff([]string{"auto_resume", "created_at", "expires_at", "id", "idle_action", "idle_timeout_s", "limits", "max_paused_s",
		"metadata", "network", "node", "state", "template", "volumes", "workdir"},
		keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
		t.Errorf("sandbox keys (-want +got):\n%s", d)
	}

	type page struct {
		Sandboxes []sandboxJSON `json:"sandboxes"`
		Next      string        `json:"next"`
	}
	ids := func(p page) (out []string) {
		for _, s := range p.Sandboxes {
			out = append(out, s.ID)
		}
		return out
	}
	var p page
	e.must(call{method: "GET", path: "/v1/sandboxes", cred: e.alice}, 200, &p)
	if d := cmp.Diff([]string{"sb_001", "sb_002", "sb_003"}, ids(p)); d != "" || p.Next != "" {
		t.Errorf("list (-want +got):\n%s next %q", d, p.Next)
	}
	if e.m.lastList.TenantID != "ten_alice" || e.m.lastList.Limit != 101 {
		t.Errorf("filter %+v", e.m.lastList)
	}
	e.must(call{method: "GET", path: "/v1/sandboxes?limit=2", cred: e.alice}, 200, &p)
	if d := cmp.Diff([]string{"sb_001", "sb_002"}, ids(p)); d != "" || p.Next != "sb_002" {
		t.Errorf("page 1 (-want +got):\n%s next %q", d, p.Next)
	}
	e.must(call{method: "GET", path: "/v1/sandboxes?limit=2&after=" + p.Next, cred: e.alice}, 200, &p)
	if d := cmp.Diff([]string{"sb_003"}, ids(p)); d != "" || p.Next != "" {
		t.Errorf("page 2 (-want +got):\n%s next %q", d, p.Next)
	}
	e.must(call{method: "GET", path: "/v1/sandboxes?metadata.run=r2&state=running", cred: e.alice}, 200, &p)
	if d := cmp.Diff([]string{"sb_003"}, ids(p)); d != "" {
		t.Errorf("metadata filter (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"run": "r2"}, e.m.lastList.Metadata); d != "" || e.m.lastList.State != "running" {
		t.Errorf("filter %+v", e.m.lastList)
	}
	e.must(call{method: "GET", path: "/v1/sandboxes?state=stopped", cred: e.alice}, 200, &p)
	if p.Sandboxes == nil || len(p.Sandboxes) != 0 {
		t.Errorf("empty list is %v, want []", p.Sandboxes)
	}

	e.must(call{method: "POST", path: "/v1/sandboxes/sb_001/timeout", cred: e.alice, body: `{"timeout_s":60}`}, 200, &sb)
	if !sb.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("expires_at %v", sb.ExpiresAt)
	}
	e.must(call{method: "DELETE", path: "/v1/sandboxes/sb_001", cred: e.alice}, 204, nil)
	e.must(call{method: "GET", path: "/v1/sandboxes/sb_001", cred: e.alice}, 404, nil)
}

func TestExecJSON(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	var res sandbox.ExecResult
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice,
		body: `{"cmd":["echo","hi"],"cwd":"/tmp","env":{"A":"1"},"stdin":"x","timeout_s":5}`}, 200, &res)
	if d := cmp.Diff(sandbox.ExecResult{Stdout: "echo hi\n", DurationMS: 1.5}, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	wantReq := sandbox.ExecRequest{Cmd: []string{"echo", "hi"}, Cwd: "/tmp", Env: map[string]string{"A": "1"}, Stdin: "x", TimeoutS: 5}
	if d := cmp.Diff(wantReq, e.m.lastExec); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"command":"ls | wc"}`}, 200, &res)
	if res.Stdout != "ls | wc\n" {
		t.Errorf("command: %q", res.Stdout)
	}
}

func TestFileRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	files := "/v1/sandboxes/" + id + "/files"
	var wr struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}
	e.must(call{method: "PUT", path: files + "?path=a.txt&mode=0600", cred: e.alice, body: "hello\x00world", ctype: "-"}, 200, &wr)
	if wr.Path != "a.txt" || wr.Size != 11 || e.m.lastMode != 0o600 {
		t.Errorf("put: %+v mode %o", wr, e.m.lastMode)
	}
	e.must(call{method: "PUT", path: files + "?path=/tmp/b", cred: e.alice, body: "b", ctype: "text/plain"}, 200, &wr)
	if e.m.lastMode != 0o644 {
		t.Errorf("default mode %o", e.m.lastMode)
	}
	a := e.must(call{method: "GET", path: files + "?path=a.txt", cred: e.alice}, 200, nil)
	if string(a.body) != "hello\x00world" || a.header.Get("Content-Type") != "application/octet-stream" ||
		a.header.Get("Content-Length") != "11" {
		t.Errorf("get: %q %v", a.body, a.header)
	}
	e.must(call{method: "POST", path: files + "/mkdir", cred: e.alice, body: `{"path":"d"}`}, 204, nil)
	if e.m.lastMode != 0o755 {
		t.Errorf("mkdir default mode %o", e.m.lastMode)
	}
	e.must(call{method: "POST", path: files + "/mkdir", cred: e.alice, body: `{"path":"e","mode":"0700"}`}, 204, nil)
	if e.m.lastMode != 0o700 {
		t.Errorf("mkdir mode %o", e.m.lastMode)
	}
	e.must(call{method: "POST", path: files + "/move", cred: e.alice, body: `{"from":"e","to":"f"}`}, 204, nil)

	var ls struct {
		Entries []entryJSON `json:"entries"`
	}
	e.must(call{method: "GET", path: files + "?path=/home/user&list=1", cred: e.alice}, 200, &ls)
	want := []entryJSON{
		{Name: "a.txt", Path: "/home/user/a.txt", Type: "file", Size: 11, Mode: "0600", Mtime: t0},
		{Name: "d", Path: "/home/user/d", Type: "dir", Mode: "0755", Mtime: t0},
		{Name: "f", Path: "/home/user/f", Type: "dir", Mode: "0700", Mtime: t0},
	}
	if d := cmp.Diff(want, ls.Entries); d != "" {
		t.Errorf("list (-want +got):\n%s", d)
	}
	e.must(call{method: "DELETE", path: files + "?path=f&recursive=1", cred: e.alice}, 204, nil)
	e.must(call{method: "DELETE", path: files + "?path=a.txt", cred: e.alice}, 204, nil)
	a = e.must(call{method: "GET", path: files + "?path=a.txt", cred: e.alice}, 404, nil)
	if code, _ := a.errCode(); code != "not_found" || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("missing file: %s %v", a.body, a.header)
	}
	a = e.must(call{method: "GET", path: files + "?path=d", cred: e.alice}, 400, nil)
	if _, msg := a.errCode(); !strings.Contains(msg, "directory") {
		t.Errorf("directory read: %s", msg)
	}
}

func TestTokenTenantKeyRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	var tok struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	a := e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/tokens", cred: e.alice, body: `{"ttl_s":600}`}, 201, &tok)
	if !strings.HasPrefix(tok.Token, "alt_") || !tok.ExpiresAt.Equal(t0.Add(10*time.Minute)) || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("token %+v %v", tok, a.header)
	}
	stored, err := e.st.TokenByHash(t.Context(), HashCredential(tok.Token))
	if err != nil || stored.SandboxID != id || stored.TenantID != "ten_alice" {
		t.Errorf("stored token %+v %v", stored, err)
	}

	var ten tenancy.Tenant
	e.must(call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{"name":"carol","max_sandboxes":3,"max_memory_mb":2048}`}, 201, &ten)
	if !strings.HasPrefix(ten.ID, "ten_") || ten.Name != "carol" || ten.MaxSandboxes != 3 || ten.MaxMemoryMB != 2048 || !ten.CreatedAt.Equal(t0) {
		t.Errorf("tenant %+v", ten)
	}
	e.must(call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{"name":"carol"}`}, 409, nil)
	// A quota change sets what it names and keeps the rest.
	e.must(call{method: "PATCH", path: "/v1/tenants/carol", cred: e.admin, body: `{"max_memory_mb":0}`}, 200, &ten)
	if ten.Name != "carol" || ten.MaxSandboxes != 3 || ten.MaxMemoryMB != 0 {
		t.Errorf("tenant after PATCH: %+v", ten)
	}
	if got, err := e.st.TenantByName(t.Context(), "carol"); err != nil || got.MaxSandboxes != 3 || got.MaxMemoryMB != 0 {
		t.Errorf("stored tenant after PATCH: %+v %v", got, err)
	}
	var tl struct{ Tenants []tenancy.Tenant }
	e.must(call{method: "GET", path: "/v1/tenants", cred: e.admin}, 200, &tl)
	if len(tl.Tenants) != 4 {
		t.Errorf("tenants %+v", tl)
	}

	var nk struct{ ID, Key, Tenant, Name string }
	e.must(call{method: "POST", path: "/v1/keys", cred: e.admin, body: `{"tenant":"carol","name":"ci"}`}, 201, &nk)
	if !strings.HasPrefix(nk.Key, "alk_") || nk.Tenant != "carol" || nk.Name != "ci" {
		t.Errorf("key %+v", nk)
	}
	// The new key works, for carol only.
	carolSB := e.sandbox(nk.Key)
	e.must(call{method: "GET", path: "/v1/sandboxes/" + carolSB, cred: e.alice}, 404, nil)

	var kl struct{ Keys []keyJSON }
	e.must(call{method: "GET", path: "/v1/keys", cred: nk.Key}, 200, &kl)
	if d := cmp.Diff([]keyJSON{{ID: nk.ID, Tenant: "carol", Name: "ci", CreatedAt: t0}}, kl.Keys); d != "" {
		t.Errorf("own keys (-want +got):\n%s", d)
	}
	e.must(call{method: "GET", path: "/v1/keys", cred: e.admin}, 200, &kl)
	if len(kl.Keys) != 4 || strings.Contains(string(mustJSON(t, kl)), "hash") {
		t.Errorf("all keys %+v", kl)
	}
	e.must(call{method: "DELETE", path: "/v1/keys/" + nk.ID, cred: e.admin}, 204, nil)
	e.must(call{method: "DELETE", path: "/v1/keys/" + nk.ID, cred: e.admin}, 404, nil)
	e.must(call{method: "GET", path: "/v1/keys", cred: nk.Key}, 401, nil)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
