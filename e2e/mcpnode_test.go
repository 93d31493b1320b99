package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestMCPNode drives the MCP bridge with the official TypeScript SDK
// (e2e/mcpnode, pinned in its package-lock.json; .ci/run installs it with
// npm ci) over streamable HTTP and stdio, as a Node harness would.
func TestMCPNode(t *testing.T) {
	node, dir := nodeProject(t, "mcpnode", "@modelcontextprotocol/sdk", "the TypeScript SDK test")
	s := startServer(t, "")
	must[client.Tenant](t)(s.admin().CreateTenant(ctx, client.TenantRequest{Name: "mcp-node"}))
	key := must[client.NewKey](t)(s.admin().CreateKey(ctx, "mcp-node", "node")).Key
	cmd := exec.Command(node, "run.mjs", s.url, key, s.bin)
	cmd.Dir = dir
	runNode(t, cmd, 3*time.Minute)
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
