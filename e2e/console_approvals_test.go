package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// approvalsShots are the pages approvals.mjs must have photographed, in
// order.
var approvalsShots = []string{"inbox-empty", "inbox-pending", "badge", "inbox-allowed", "inbox-decided-meanwhile",
	"narrow-inbox-pending", "narrow-inbox-decided"}

// TestConsoleApprovals is issue 26's console acceptance: the inbox shows
// a pending approval within 2 s and a click decides it. In Debian's
// headless Chromium (e2e/consolenode/approvals.mjs), against a sandbox
// whose policy asks about every host it does not allow: a curl to
// denied.test is held and opens an approval, which the header's badge
// (on another page, in another window) and the inbox both show within
// 2 s; Allow lets the curl through, Deny (reached from the badge)
// refuses it, a click on one decided meanwhile through the API says so,
// Allow and remember (at 420 px) lets it and every later one through.
// Here, through the API: each approval's state, who decided, why and
// what was remembered, the sandbox's allow list, and a last curl that is
// let through without being asked about.
func TestConsoleApprovals(t *testing.T) {
	node, dir, chromium, shots := browserTest(t, "the console approvals browser test", "approvals")

	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	admin := s.admin()
	// A tenant of its own, signed in with a plain (not admin) key: every
	// approval listed is this test's.
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "console-apr"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "console-apr", "browser"))
	c := client.New(s.url, key.Key)
	t.Cleanup(func() { destroyEverything(t, c) })
	asks := &client.NetworkPolicy{Mode: client.NetworkAllowlist, Ask: client.Ask{All: true}, AskTimeoutS: 60}
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Network: asks, Timeout: 15 * time.Minute}))

	cmd := exec.Command(node, "approvals.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_KEY="+key.Key, "AIRLOCK_KEY_ID="+key.ID,
		"AIRLOCK_SANDBOX="+sb.ID, "AIRLOCK_DENIED_HOST="+fakenet.DeniedName,
		"AIRLOCK_SCREENSHOTS="+shots, "AIRLOCK_CHROMIUM="+chromium,
		"HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NO_PROXY=*")
	out := runNode(t, cmd, 5*time.Minute)
	ids, curls := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "APPROVAL":
			ids[f[1]] = f[2]
		case len(f) >= 2 && f[0] == "CURL":
			curls[f[1]] = strings.Join(f[2:], " ")
		}
	}

	// What the browser did, seen through the API.
	type decided struct{ State, By, Reason, Remember string }
	for _, tc := range []struct {
		step string
		want decided
		curl string // how the held curl's status line starts
	}{
		{"allow", decided{client.ApprovalAllowed, key.ID, "looks fine from the console", "once"}, "HTTP/1.1 200"},
		{"deny", decided{client.ApprovalDenied, key.ID, "not from here", "once"}, "HTTP/1.1 403"},
		{"api", decided{client.ApprovalDenied, key.ID, "decided through the API", "once"}, "HTTP/1.1 403"},
		{"remember", decided{client.ApprovalAllowed, key.ID, "", "sandbox"}, "HTTP/1.1 200"},
	} {
		id := ids[tc.step]
		if id == "" {
			t.Errorf("%s: approvals.mjs printed no APPROVAL line", tc.step)
			continue
		}
		a := must[client.Approval](t)(c.GetApproval(ctx, id))
		if got := (decided{a.State, a.DecidedBy, a.Reason, a.Remember}); got != tc.want || a.SandboxID != sb.ID ||
			a.Egress == nil || a.Egress.Host != fakenet.DeniedName || a.Egress.Port != 80 {
			t.Errorf("%s: approval %+v (egress %+v), want %+v for %s:80 of %s", tc.step, got, a.Egress, tc.want, fakenet.DeniedName, sb.ID)
		}
		if !strings.HasPrefix(curls[tc.step], tc.curl) {
			t.Errorf("%s: the held curl answered %q, want %q", tc.step, curls[tc.step], tc.curl)
		}
	}
	if p := must[client.NetworkPolicy](t)(c.GetNetwork(ctx, sb.ID)); !slices.Contains(p.Allow, fakenet.DeniedName+":80") {
		t.Errorf("allow list after Allow and remember: %v, want %s:80 on it", p.Allow, fakenet.DeniedName)
	}
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://" + fakenet.DeniedName + "/"}))
	if res.Stdout != "200" {
		t.Errorf("curl after remember: %q (exit %d), want 200", res.Stdout, res.ExitCode)
	}
	if all := must[[]client.Approval](t)(c.ListApprovals(ctx, "")); len(all) != 4 {
		t.Errorf("approvals: %d, want the 4 the browser decided (nothing asked after remember)", len(all))
	}
	for i, name := range approvalsShots {
		f := filepath.Join(shots, fmt.Sprintf("%02d-%s.png", i+1, name))
		if fi, err := os.Stat(f); err != nil || fi.Size() < 10<<10 {
			t.Errorf("screenshot %s: %v (a page worth looking at is more than 10 KiB)", f, err)
		}
	}

	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Errorf("destroy %s: %v", sb.ID, err)
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}
