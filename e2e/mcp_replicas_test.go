package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// TestMCPReplicas: MCP over HTTP through a follower replica, which
// forwards /mcp to the leader like every call, at 2026-07-28 and at
// 2025-11-25. Kill -9 the leader: the 2026-07-28 client goes on, its next
// call served by the new leader with nothing to restore (no session is
// held anywhere); a 2025-11-25 session lived in the old leader's memory,
// so that client must initialize again, which works through the same URL.
func TestMCPReplicas(t *testing.T) {
	rs := newReplicaSet(t)
	a := rs.replica()
	waitLeader(t, a, a, 30*time.Second)
	b := rs.replica()
	waitLeader(t, b, a, 30*time.Second)
	viaB := b.admin()
	tok := must[client.JoinToken](t)(viaB.CreateJoinToken(ctx, 0))
	np := &nodeProc{t: t, bin: rs.bin, dataDir: tornDownDataDir(t), addr: freeAddr(t)}
	np.start("--join", b.url, "--token", tok.Token, "--ca-hash", tok.CAHash, "--name", "m1")
	t.Cleanup(func() { np.stop(syscall.SIGTERM) })
	waitNode(t, viaB, "m1", "ready", 20*time.Second)
	must[client.Tenant](t)(viaB.CreateTenant(ctx, client.TenantRequest{Name: "mcp-rep"}))
	key := must[client.NewKey](t)(viaB.CreateKey(ctx, "mcp-rep", "k")).Key

	modern := mcpHTTPAt(t, b.url, key, "2026-07-28", nil)
	legacy := mcpHTTPAt(t, b.url, key, "2025-11-25", nil)
	for cs, want := range map[*mcpsdk.ClientSession]string{modern: "2026-07-28", legacy: "2025-11-25"} {
		if got := cs.InitializeResult().ProtocolVersion; got != want {
			t.Fatalf("through the follower: negotiated %s, want %s", got, want)
		}
	}
	id := mcpCreate(t, modern, map[string]any{"timeout_s": 300})
	mcpCall[any](t, modern, "write_file", map[string]any{"sandbox_id": id, "path": "note.txt", "content": "before\n"})
	if r := mcpCall[mcpRun](t, legacy, "run_command", map[string]any{"sandbox_id": id, "command": "cat note.txt"}); r.Stdout != "before\n" {
		t.Errorf("2025-11-25 through the follower: %+v", r)
	}

	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	a.cmd = nil
	waitLeader(t, b, b, 20*time.Second)

	if r := mcpCall[mcpRun](t, modern, "run_command", map[string]any{"sandbox_id": id, "command": "cat note.txt; echo after >> note.txt"}); r.Stdout != "before\n" {
		t.Errorf("2026-07-28 after the takeover, on the same client: %+v", r)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err := legacy.CallTool(cctx, &mcpsdk.CallToolParams{Name: "sandbox_list"})
	cancel()
	t.Logf("the 2025-11-25 session after the takeover: %v", err)
	again := mcpHTTPAt(t, b.url, key, "2025-11-25", nil)
	if r := mcpCall[mcpRun](t, again, "run_command", map[string]any{"sandbox_id": id, "command": "cat note.txt"}); r.Stdout != "before\nafter\n" {
		t.Errorf("2025-11-25 on a new session after the takeover: %+v", r)
	}
	mcpCall[any](t, modern, "sandbox_destroy", map[string]any{"sandbox_id": id})
}
