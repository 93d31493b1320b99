package e2e

import (
	"os/exec"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// TestMCPNode2 drives the MCP bridge with the TypeScript SDK's v2 client
// (e2e/mcpnode2, @modelcontextprotocol/client pinned in its
// package-lock.json; .ci/run installs it with npm ci) over streamable HTTP
// and stdio, at 2026-07-28 (stateless) and at the three handshake
// revisions before it, asserting the revision each connection negotiated;
// over stdio to an `airlock mcp` that embeds its own daemon; and asked
// about the approval a command waits on, by input_required at 2026-07-28
// and by elicitation before it.
func TestMCPNode2(t *testing.T) {
	node, dir := nodeProject(t, "mcpnode2", "@modelcontextprotocol/client", "the TypeScript SDK v2 test")
	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	must[client.Tenant](t)(s.admin().CreateTenant(ctx, client.TenantRequest{Name: "mcp-node2"}))
	key := must[client.NewKey](t)(s.admin().CreateKey(ctx, "mcp-node2", "node")).Key
	ask := askingSandbox(t, client.New(s.url, key))
	cmd := exec.Command(node, "run.mjs", s.url, key, s.bin, tornDownDataDir(t), ask)
	cmd.Dir = dir
	runNode(t, cmd, 5*time.Minute)
}
