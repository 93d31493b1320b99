package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestE2BNodeLifecycle drives pause, resume (connect), snapshots and
// forks through the E2B facade with the unmodified e2b npm SDK
// (e2bnode/lifecycle.mjs), then checks that Airlock's own API and audit
// log saw them: the sandbox paused and resumed (its processes kept), a
// snapshot taken, forks made, nothing left running.
func TestE2BNodeLifecycle(t *testing.T) {
	node, dir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20, 18, 1) {
		linuxtest.Lacking(t, "the E2B SDK test", fmt.Sprintf("the e2b SDK needs node >= 20.18.1, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	s := startServer(t, "")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "e2b-lifecycle"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-lifecycle", "node")).Key
	c := client.New(s.url, key)

	cmd := exec.Command(node, "lifecycle.mjs", s.url, key)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
	out := runNode(t, cmd, 3*time.Minute)

	var id string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			id = strings.TrimSpace(rest)
		}
	}
	if id == "" {
		t.Fatal("lifecycle.mjs printed no SANDBOX line")
	}
	if sb := must[client.Sandbox](t)(c.GetSandbox(ctx, id)); sb.State != client.StateStopped {
		t.Errorf("sandbox %s in Airlock's API: state %q, want stopped", id, sb.State)
	}
	count := map[string]int{}
	for _, e := range must[[]client.AuditEvent](t)(c.AuditEvents(ctx, id, client.AuditQuery{})) {
		count[e.Type]++
	}
	for typ, want := range map[string]int{"sandbox.paused": 3, "sandbox.resumed": 2, "snapshot.created": 1, "sandbox.forked": 1} {
		if count[typ] != want {
			t.Errorf("audit log of %s has %d %s events, want %d", id, count[typ], typ, want)
		}
	}
	if snaps := must[[]client.Snapshot](t)(c.ListSnapshots(ctx)); len(snaps) != 0 {
		t.Errorf("snapshots left: %+v", snaps)
	}
	page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{}))
	for _, sb := range page.Sandboxes {
		if sb.State != client.StateStopped {
			t.Errorf("sandbox %s left %s (fork of %q, snapshot %q)", sb.ID, sb.State, sb.ForkOf, sb.Snapshot)
		}
	}
}
