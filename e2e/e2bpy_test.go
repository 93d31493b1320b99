package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/e2b"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestE2BPython drives the E2B facade with the unmodified E2B Python SDK
// (2.34.0, in ../shared/vendor/e2b-python, with Debian's python3 and the
// python3-* packages .ci/run installs), sync and async, configured as for
// E2B's self-hosting (E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN, a key in
// E2B's e2b_<hex> shape), with a guard that refuses any connection or name
// lookup off loopback. Then it checks that what the SDK did is Airlock's
// own: every sandbox it made ended, in the right tenant, with its audit log.
func TestE2BPython(t *testing.T) {
	python, site := e2bPythonSDK(t)
	s := startServer(t, "")
	admin := s.admin()
	for _, name := range []string{"e2b-py", "e2b-py-other"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-py", "python")).Key
	otherKey := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-py-other", "python")).Key

	dir, err := filepath.Abs("e2bpy")
	if err != nil {
		t.Fatal(err)
	}
	// PYTHONDONTWRITEBYTECODE: no __pycache__ in the repository or the
	// shared vendor folder. runNode takes any program that ends with "ok".
	cmd := exec.Command(python, "run.py", s.url, e2b.WrapKey(key), e2b.WrapKey(otherKey))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1",
		"HTTPS_PROXY=", "HTTP_PROXY=", "ALL_PROXY=", "https_proxy=", "http_proxy=", "all_proxy=")
	out := runNode(t, cmd, 6*time.Minute)

	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			ids = append(ids, strings.TrimSpace(rest))
		}
	}
	if len(ids) < 13 {
		t.Fatalf("run.py printed %d SANDBOX lines, want at least 13 (2 sync, 1 async, 10 concurrent)", len(ids))
	}
	c := client.New(s.url, key)
	for _, id := range ids {
		if sb, err := c.GetSandbox(ctx, id); err != nil || sb.State != client.StateStopped {
			t.Errorf("sandbox %s in Airlock's API: %+v, %v; want stopped", id, sb.State, err)
		}
	}
	first := must[client.Sandbox](t)(c.GetSandbox(ctx, ids[0]))
	if first.Metadata["suite"] != "e2bpy" {
		t.Errorf("first sandbox's metadata: %v", first.Metadata)
	}
	// allow_internet_access=True, the SDK's default, is every public
	// address as far as an Airlock policy can say it.
	if n := first.Network; n == nil || n.Mode != client.NetworkAllowlist || !slices.Equal(n.Allow, []string{"0.0.0.0/0", "::/0"}) {
		t.Errorf("first sandbox's network policy: %+v", n)
	}
	if _, err := client.New(s.url, otherKey).GetSandbox(ctx, ids[0]); err == nil {
		t.Errorf("the other tenant sees sandbox %s", ids[0])
	}
	seen := map[string]bool{}
	for _, e := range must[[]client.AuditEvent](t)(c.AuditEvents(ctx, ids[0], client.AuditQuery{})) {
		seen[e.Type] = true
	}
	for _, typ := range []string{"sandbox.created", "exec.started", "exec.exited", "file.written", "file.read",
		"session.created", "session.input", "session.resized", "sandbox.destroyed"} {
		if !seen[typ] {
			t.Errorf("audit log of %s has no %s event", ids[0], typ)
		}
	}
	if page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning})); len(page.Sandboxes) != 0 {
		t.Errorf("sandboxes left running: %+v", page.Sandboxes)
	}
}

// e2bPythonSDK finds Debian's python3 and the E2B Python SDK's PYTHONPATH
// (the shared vendor folder: $AIRLOCK_SHARED_TOOLS/../vendor, else
// ../shared/vendor beside the repository), and checks that the SDK
// imports, or skips the test (fails it in CI, where .ci/run installs
// what it needs).
func e2bPythonSDK(t *testing.T) (python, site string) {
	t.Helper()
	const test = "the E2B Python SDK test"
	vendor := filepath.Join("..", "..", "shared", "vendor")
	if d := os.Getenv("AIRLOCK_SHARED_TOOLS"); d != "" {
		vendor = filepath.Join(d, "..", "vendor")
	}
	site, err := filepath.Abs(filepath.Join(vendor, "e2b-python", "site"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(site, "e2b", "__init__.py")); err != nil {
		linuxtest.Lacking(t, test, "no E2B Python SDK at "+site)
	}
	python = "/usr/bin/python3" // Debian's, with its python3-* packages
	if _, err := os.Stat(python); err != nil {
		linuxtest.Lacking(t, test, "no "+python)
	}
	imp := exec.Command(python, "-B", "-c", "import e2b, e2b_connect, h2, google.protobuf, dateutil, anyio")
	imp.Env = append(os.Environ(), "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1")
	if out, err := imp.CombinedOutput(); err != nil {
		linuxtest.Lacking(t, test, "the SDK does not import (install python3-h2 python3-protobuf python3-dateutil python3-typing-extensions "+
			"python3-bracex python3-anyio python3-sniffio python3-h11 python3-certifi python3-idna python3-pygments python3-markdown-it python3-mdurl): "+
			strings.TrimSpace(string(out)))
	}
	return python, site
}
