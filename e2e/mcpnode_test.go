package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestMCPNode drives the MCP bridge with the official TypeScript SDK
// (e2e/mcpnode, pinned in its package-lock.json; .ci/run installs it with
// npm ci) over streamable HTTP and stdio, as a Node harness would; and is
// asked by elicitation about the approval a command waits on.
func TestMCPNode(t *testing.T) {
	node, dir := nodeProject(t, "mcpnode", "@modelcontextprotocol/sdk", "the TypeScript SDK test")
	n := fakenet.Start(t)
	mcpNodeSuite(t, node, dir, startServer(t, "", "--egress-dns", n.DNS))
}

// mcpNodeSuite runs e2e/mcpnode/run.mjs against the server s, whose
// egress resolves through a fake internet.
func mcpNodeSuite(t *testing.T, node, dir string, s *server) {
	t.Helper()
	must[client.Tenant](t)(s.admin().CreateTenant(ctx, client.TenantRequest{Name: "mcp-node"}))
	key := must[client.NewKey](t)(s.admin().CreateKey(ctx, "mcp-node", "node")).Key
	ask := askingSandbox(t, client.New(s.url, key))
	cmd := exec.Command(node, "run.mjs", s.url, key, s.bin, ask)
	cmd.Dir = dir
	runNode(t, cmd, 3*time.Minute)
}

// askingSandbox is a sandbox whose network policy asks about every
// connection (a node script curls denied.test in it).
func askingSandbox(t *testing.T, c *client.Client) string {
	t.Helper()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Timeout: 30 * time.Minute,
		Network: &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: []string{}, Ask: client.Ask{All: true}, AskTimeoutS: 60}}))
	t.Cleanup(func() { c.DeleteSandbox(context.Background(), sb.ID) })
	return sb.ID
}

// runNode runs a node script (cmd) for at most limit and fails the test
// unless it exits 0 with "ok" as its last line; it returns the output. A
// script out of time gets SIGTERM first, so that it can close what it
// started (a browser in a process group of its own), then SIGKILL.
func runNode(t *testing.T, cmd *exec.Cmd, limit time.Duration) []byte {
	t.Helper()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("node %s did not finish:\n%s", strings.Join(cmd.Args[1:], " "), out)
	}
	t.Logf("node %s:\n%s", cmd.Args[1], out)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("node %s: %v", cmd.Args[1], err)
	}
	return out
}

// nodeProject finds node and the npm project e2e/name with pkg installed,
// or skips test (fails it in CI, where .ci/run installs them).
func nodeProject(t *testing.T, name, pkg, test string) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg)))
	if err != nil || statErr != nil {
		why := "node is not installed"
		if err == nil {
			why = "e2e/" + name + "/node_modules is missing (run npm ci in e2e/" + name + ")"
		}
		linuxtest.Lacking(t, test, why)
	}
	return node, dir
}
