package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// lifecycleShots are the pages lifecycle.mjs must have photographed, in
// order.
var lifecycleShots = []string{"list-paused", "sandbox-paused", "terminal-paused", "narrow-terminal-paused",
	"snapshot-taken", "snapshots", "narrow-snapshots", "from-snapshot", "forked"}

// TestConsoleLifecycle drives pause, resume, snapshots and forks through
// the web console in Debian's headless Chromium (e2e/consolenode/
// lifecycle.mjs): pause a sandbox from its row and from its page and see
// "paused" (the API refusing work meanwhile), its Terminal and Files tabs
// saying to resume instead of failing, resume and type in a new shell,
// take a snapshot and find it listed, start a sandbox from it, fork 2,
// delete the snapshot. Here, through the API: the new sandboxes hold the
// file the first one had, the snapshot is gone, the first sandbox runs.
func TestConsoleLifecycle(t *testing.T) {
	node, dir, chromium, shots := browserTest(t, "the console lifecycle browser test", "lifecycle")

	s := startServer(t, "")
	admin := s.admin()
	t.Cleanup(func() { destroyEverything(t, admin) })
	sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{
		Timeout: 30 * time.Minute, Metadata: map[string]string{"owner": "console-e2e-lifecycle"},
	}))
	mark := make([]byte, 12)
	rand.Read(mark)
	marker := "lifecycle-" + hex.EncodeToString(mark) + "\n"
	const markerPath = "/home/user/lifecycle-marker.txt"
	must[int64](t)(admin.WriteFile(ctx, sb.ID, markerPath, strings.NewReader(marker), 0o644))

	cmd := exec.Command(node, "lifecycle.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_KEY="+s.adminKey, "AIRLOCK_SANDBOX="+sb.ID,
		"AIRLOCK_SNAPSHOT_NAME=console-snap-1", "AIRLOCK_SCREENSHOTS="+shots, "AIRLOCK_CHROMIUM="+chromium,
		"HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NO_PROXY=*")
	out := runNode(t, cmd, 5*time.Minute)
	vals := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && strings.ToUpper(k) == k {
			vals[k] = strings.TrimSpace(v)
		}
	}
	fromSnap, forks := vals["FROM_SNAPSHOT"], strings.Split(vals["FORKS"], ",")
	if fromSnap == "" || len(forks) != 2 {
		t.Fatalf("lifecycle.mjs printed FROM_SNAPSHOT %q, FORKS %q", fromSnap, vals["FORKS"])
	}

	// What the browser did, seen through the API.
	if got := must[client.Sandbox](t)(admin.GetSandbox(ctx, sb.ID)); got.State != client.StateRunning || !got.PausedAt.IsZero() {
		t.Errorf("sandbox paused and resumed in the browser: state %q, paused_at %v; want running, no paused_at", got.State, got.PausedAt)
	}
	if ses := must[[]client.Session](t)(admin.ListSessions(ctx, sb.ID)); len(ses) != 1 {
		t.Errorf("sessions after the terminal typed in once resumed: %+v, want the one it made", ses)
	}
	for _, id := range append([]string{fromSnap}, forks...) {
		got := must[client.Sandbox](t)(admin.GetSandbox(ctx, id))
		if got.State != client.StateRunning {
			t.Errorf("%s (snapshot %q, fork of %q): state %q, want running", id, got.Snapshot, got.ForkOf, got.State)
		}
		var b bytes.Buffer
		if _, err := admin.ReadFile(ctx, id, markerPath, &b); err != nil || b.String() != marker {
			t.Errorf("%s: %s holds %q (%v), want the %q its origin had", id, markerPath, b.String(), err, marker)
		}
	}
	if snaps := must[[]client.Snapshot](t)(admin.ListSnapshots(ctx)); len(snaps) != 0 {
		t.Errorf("snapshots after Delete in the browser: %+v, want none", snaps)
	}
	for i, name := range lifecycleShots {
		f := filepath.Join(shots, fmt.Sprintf("%02d-%s.png", i+1, name))
		if fi, err := os.Stat(f); err != nil || fi.Size() < 10<<10 {
			t.Errorf("screenshot %s: %v (a page worth looking at is more than 10 KiB)", f, err)
		}
	}

	ids := append([]string{sb.ID, fromSnap}, forks...)
	for _, id := range ids {
		if err := admin.DeleteSandbox(ctx, id); err != nil {
			t.Errorf("destroy %s: %v", id, err)
		}
	}
	assertNoSandboxesLeft(t, s, ids...)
}

// destroyEverything destroys every sandbox the client can list that has
// not ended, paused ones included, and deletes its snapshots, so that a
// run that failed halfway leaves nothing behind.
func destroyEverything(t *testing.T, c *client.Client) {
	for _, state := range []string{client.StateRunning, client.StatePaused, client.StateCreating} {
		page, err := c.ListSandboxes(ctx, client.ListOptions{State: state, Limit: 1000})
		if err != nil {
			t.Errorf("list %s sandboxes for cleanup: %v", state, err)
			continue
		}
		for _, sb := range page.Sandboxes {
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Errorf("destroy %s: %v", sb.ID, err)
			}
		}
	}
	snaps, err := c.ListSnapshots(ctx)
	if err != nil {
		t.Errorf("list snapshots for cleanup: %v", err)
	}
	for _, sn := range snaps {
		if err := c.DeleteSnapshot(ctx, sn.Name); err != nil {
			t.Errorf("delete snapshot %s: %v", sn.Name, err)
		}
	}
}
