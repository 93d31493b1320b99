package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestE2BNode drives the E2B facade with the unmodified e2b npm SDK
// (e2e/e2bnode, pinned in its package-lock.json; .ci/run installs it with
// npm ci), pointed at the server by E2B_API_URL and E2B_SANDBOX_URL, with a
// guard that refuses any connection off loopback. Then it checks that what
// the SDK did is Airlock's own: the sandbox in the API, its audit log.
func TestE2BNode(t *testing.T) {
	node, dir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	// The SDK's engines: node >= 20.18.1 (Debian's own nodejs 18 is not).
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20, 18, 1) {
		linuxtest.Lacking(t, "the E2B SDK test", fmt.Sprintf("the e2b SDK needs node >= 20.18.1, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	e2bNodeSuite(t, node, dir, startServer(t, ""))
}

// e2bNodeSuite runs e2e/e2bnode/run.mjs against the server s and checks
// what it did in Airlock's own API and audit log.
func e2bNodeSuite(t *testing.T, node, dir string, s *server) {
	t.Helper()
	admin := s.admin()
	for _, name := range []string{"e2b-node", "e2b-other"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-node", "node")).Key
	otherKey := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-other", "node")).Key
	c := client.New(s.url, key)

	// Made natively, used through the facade.
	native := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Metadata: map[string]string{"made": "natively"}}))
	must[int64](t)(c.WriteFile(ctx, native.ID, "native.txt", strings.NewReader("native"), 0o644))

	cmd := exec.Command(node, "run.mjs", s.url, key, otherKey, native.ID)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
	out := runNode(t, cmd, 3*time.Minute)

	// Made through the facade, seen by Airlock's own API and audit log.
	var id string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			id = strings.TrimSpace(rest)
		}
	}
	if id == "" {
		t.Fatal("run.mjs printed no SANDBOX line")
	}
	sb := must[client.Sandbox](t)(c.GetSandbox(ctx, id))
	if sb.State != client.StateStopped || sb.Metadata["suite"] != "e2bnode" {
		t.Errorf("sandbox %s in Airlock's API: state %q, metadata %v; want stopped, suite=e2bnode", id, sb.State, sb.Metadata)
	}
	if _, err := client.New(s.url, otherKey).GetSandbox(ctx, id); err == nil {
		t.Errorf("the other tenant sees sandbox %s", id)
	}
	events := must[[]client.AuditEvent](t)(c.AuditEvents(ctx, id, client.AuditQuery{}))
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.Type] = true
	}
	for _, typ := range []string{"sandbox.created", "exec.started", "exec.output", "exec.exited", "file.written", "file.read",
		"session.created", "session.input", "session.resized", "sandbox.destroyed"} {
		if !seen[typ] {
			t.Errorf("audit log of %s has no %s event", id, typ)
		}
	}
	if v := must[client.AuditVerify](t)(c.VerifyAudit(ctx, id)); !v.OK {
		t.Errorf("audit chain of %s: %+v", id, v)
	}
}

// nodeAtLeast reports whether version "X.Y.Z" is at least major.minor.patch.
func nodeAtLeast(version string, want ...int) bool {
	parts := strings.SplitN(version, ".", 3)
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		if n != w {
			return n > w
		}
	}
	return true
}

// TestE2BNodeConnectAfterRestart: with the unmodified e2b SDK, a
// background command started before the server is killed (or stopped) is
// still listed after it starts again, and commands.connect(pid) follows it
// to its end with its real exit code.
func TestE2BNodeConnectAfterRestart(t *testing.T) {
	node, dir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	for _, how := range []string{"kill -9", "SIGTERM"} {
		t.Run(strings.ReplaceAll(how, " ", ""), func(t *testing.T) {
			s := startServer(t, "")
			key := s.adminKey
			nodeRun := func(args ...string) string {
				cmd := exec.Command(node, append([]string{"restart.mjs", s.url, key}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
				return string(runNode(t, cmd, time.Minute))
			}
			out := nodeRun("start")
			var id, pid string
			for _, line := range strings.Split(out, "\n") {
				if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
					id = strings.TrimSpace(rest)
				}
				if rest, ok := strings.CutPrefix(line, "PID "); ok {
					pid = strings.TrimSpace(rest)
				}
			}
			if id == "" || pid == "" {
				t.Fatalf("restart.mjs start printed no sandbox or pid:\n%s", out)
			}
			restartServer(t, s, how, 500*time.Millisecond)
			nodeRun("connect", id, pid)
			assertNoSandboxesLeft(t, s, id)
		})
	}
}
