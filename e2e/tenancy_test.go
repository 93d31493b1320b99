package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// sandboxRoutes is every route that names a sandbox.
var sandboxRoutes = []struct{ method, path, ctype, body string }{
	{"GET", "/v1/sandboxes/{id}", "", ""},
	{"DELETE", "/v1/sandboxes/{id}", "", ""},
	{"POST", "/v1/sandboxes/{id}/timeout", "application/json", `{"timeout_s":5}`},
	{"POST", "/v1/sandboxes/{id}/exec", "application/json", `{"command":"echo pwned > /home/user/owned"}`},
	{"PUT", "/v1/sandboxes/{id}/files?path=owned", "application/octet-stream", "pwned"},
	{"GET", "/v1/sandboxes/{id}/files?path=secret", "", ""},
	{"GET", "/v1/sandboxes/{id}/files?path=/home/user&list=1", "", ""},
	{"DELETE", "/v1/sandboxes/{id}/files?path=secret", "", ""},
	{"POST", "/v1/sandboxes/{id}/files/mkdir", "application/json", `{"path":"owned-dir"}`},
	{"POST", "/v1/sandboxes/{id}/files/move", "application/json", `{"from":"secret","to":"moved"}`},
	{"POST", "/v1/sandboxes/{id}/tokens", "application/json", `{"ttl_s":60}`},
	{"GET", "/v1/sandboxes/{id}/audit", "", ""},
	{"GET", "/v1/sandboxes/{id}/audit/verify", "", ""},
	{"GET", "/v1/sandboxes/{id}/audit/export", "", ""},
	// A command by its exec id: the running ones, and any other from the
	// audit log (a not-found sandbox once fell through to its log).
	{"GET", "/v1/sandboxes/{id}/execs/{exec}", "", ""},
	{"GET", "/v1/sandboxes/{id}/execs/{exec}/output", "", ""},
	{"GET", "/v1/sandboxes/{id}/processes", "", ""},
}

func call(t *testing.T, s *server, key, method, path, ctype, body string) (int, string) {
	t.Helper()
	var hdr map[string]string
	if ctype != "" {
		hdr = map[string]string{"Content-Type": ctype}
	}
	return callWith(t, s, key, method, path, hdr, body)
}

// callWith is call with any headers.
func callWith(t *testing.T, s *server, key, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
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

func TestTenancyMatrix(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	for _, name := range []string{"tenant-a", "tenant-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	keyA := must[client.NewKey](t)(admin.CreateKey(ctx, "tenant-a", "a"))
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "tenant-b", "b"))
	a := client.New(s.url, keyA.Key)
	sbA := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{}))
	sbA2 := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{}))
	mine := must[client.ExecResult](t)(a.Exec(ctx, sbA.ID, client.ExecRequest{Command: "echo mine > secret"}))
	if _, err := a.GetExec(ctx, sbA.ID, mine.ExecID); err != nil {
		t.Fatalf("the owner reading its command by exec id: %v", err)
	}

	// Tenant B, and a token for A's other sandbox, get 404 on every route.
	tok := must[client.Token](t)(a.CreateToken(ctx, sbA2.ID, time.Minute))
	for who, key := range map[string]string{"tenant B": keyB.Key, "token of another sandbox": tok.Token} {
		for _, r := range sandboxRoutes {
			path := strings.NewReplacer("{id}", sbA.ID, "{exec}", mine.ExecID).Replace(r.path)
			code, body := call(t, s, key, r.method, path, r.ctype, r.body)
			if code != http.StatusNotFound || !strings.Contains(body, `"not_found"`) {
				t.Errorf("%s: %s %s = %d %s, want 404 not_found", who, r.method, r.path, code, body)
			}
		}
	}
	// Nothing changed in A's sandbox.
	res := must[client.ExecResult](t)(a.Exec(ctx, sbA.ID, client.ExecRequest{Command: "cat secret; ls"}))
	if res.Stdout != "mine\nsecret\n" {
		t.Errorf("A's sandbox changed: %q", res.Stdout)
	}
	if got := must[client.Sandbox](t)(a.GetSandbox(ctx, sbA.ID)); got.State != client.StateRunning {
		t.Errorf("A's sandbox: %+v", got)
	}
	// B's listing does not show A's sandboxes.
	if page := must[client.Page](t)(client.New(s.url, keyB.Key).ListSandboxes(ctx, client.ListOptions{})); len(page.Sandboxes) != 0 {
		t.Errorf("tenant B lists %+v", page.Sandboxes)
	}
	// The token works on its own sandbox.
	if res := must[client.ExecResult](t)(client.New(s.url, tok.Token).Exec(ctx, sbA2.ID, client.ExecRequest{Command: "echo ok"})); res.Stdout != "ok\n" {
		t.Errorf("token on its sandbox: %+v", res)
	}
	// A deleted key gets 401.
	if err := admin.DeleteKey(ctx, keyB.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := call(t, s, keyB.Key, "GET", "/v1/sandboxes", "", ""); code != http.StatusUnauthorized {
		t.Errorf("deleted key: %d %s", code, body)
	}
	// A tenant key cannot manage tenants or keys.
	if code, _ := call(t, s, keyA.Key, "POST", "/v1/tenants", "application/json", `{"name":"x"}`); code != http.StatusForbidden {
		t.Errorf("tenant key creating a tenant: %d, want 403", code)
	}
	var e struct{ Error struct{ Code string } }
	_, body := call(t, s, "", "GET", "/v1/sandboxes", "", "")
	if json.Unmarshal([]byte(body), &e); e.Error.Code != "unauthenticated" {
		t.Errorf("no key: %s", body)
	}
	if _, err := client.New(s.url, "alk_nope").ListSandboxes(ctx, client.ListOptions{}); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("unknown key: %v", err)
	}
}

// TestTenantQuotaChange: an admin raises and lowers a tenant's quota on a
// live server; the next create follows the new quota, and the sandboxes
// already running stay.
func TestTenantQuotaChange(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "grows", MaxSandboxes: 1}))
	c := client.New(s.url, must[client.NewKey](t)(admin.CreateKey(ctx, "grows", "")).Key)
	first := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	if _, err := c.CreateSandbox(ctx, client.CreateRequest{}); !errors.Is(err, client.ErrLimitExceeded) {
		t.Fatalf("second sandbox under a quota of 1: %v", err)
	}
	two := 2
	if got := must[client.Tenant](t)(admin.UpdateTenant(ctx, "grows", client.TenantQuota{MaxSandboxes: &two})); got.MaxSandboxes != 2 || got.MaxMemoryMB != 0 {
		t.Fatalf("tenant after the change: %+v", got)
	}
	second := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	// Lowered below what runs: both stay, a third is refused.
	one := 1
	must[client.Tenant](t)(admin.UpdateTenant(ctx, "grows", client.TenantQuota{MaxSandboxes: &one}))
	if _, err := c.CreateSandbox(ctx, client.CreateRequest{}); !errors.Is(err, client.ErrLimitExceeded) {
		t.Errorf("create over the lowered quota: %v", err)
	}
	for _, id := range []string{first.ID, second.ID} {
		if sb := must[client.Sandbox](t)(c.GetSandbox(ctx, id)); sb.State != client.StateRunning {
			t.Errorf("sandbox %s after the quota was lowered: %s", id, sb.State)
		}
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.UpdateTenant(ctx, "grows", client.TenantQuota{MaxSandboxes: &two}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("a tenant's own key changed its quota: %v", err)
	}
}
