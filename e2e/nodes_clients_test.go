package e2e

import (
	"bytes"
	"crypto/sha256"
	"io"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestNodesClients: the clients people already use work on sandboxes that
// run on a node, through a control plane with no runtime of its own: the
// unmodified e2b SDK (the E2B facade, host-named ports included) and the
// official MCP TypeScript SDK (tools, stdio, an egress approval asked
// about by elicitation, held by the egress proxy of a sandbox on the
// node). Every sandbox they made is on the node.
func TestNodesClients(t *testing.T) {
	e2bNode, e2bDir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	mcpNode, mcpDir := nodeProject(t, "mcpnode", "@modelcontextprotocol/sdk", "the TypeScript SDK test")
	c := startCluster(t, "n1")
	e2bNodeSuite(t, e2bNode, e2bDir, c.s)
	mcpNodeSuite(t, mcpNode, mcpDir, c.s)
	seen := 0
	for _, tenant := range []string{"e2b-node", "mcp-node"} {
		key := must[client.NewKey](t)(c.admin.CreateKey(ctx, tenant, "check"))
		page := must[client.Page](t)(client.New(c.s.url, key.Key).ListSandboxes(ctx, client.ListOptions{Limit: 100}))
		for _, sb := range page.Sandboxes {
			seen++
			if sb.Node != "n1" {
				t.Errorf("sandbox %s of %s is on node %q, want n1", sb.ID, tenant, sb.Node)
			}
		}
	}
	if seen == 0 {
		t.Error("the clients' sandboxes are not listed")
	}
}

// TestNodesLargeFile: a 1 GiB file goes up to a sandbox on a node and
// back through the control plane, intact, and neither the control plane
// nor the node holds it in memory: each one's resident set grows by less
// than 128 MiB while it streams.
func TestNodesLargeFile(t *testing.T) {
	const size = 1 << 30
	const bound = 128 << 10 // KiB
	c := startCluster(t, "n1")
	sb := must[client.Sandbox](t)(c.admin.CreateSandbox(ctx, client.CreateRequest{DiskMB: 2048, Timeout: 10 * time.Minute}))
	want := sha256.New()
	io.Copy(want, io.LimitReader(mrand.NewChaCha8([32]byte{1}), size))
	procs := map[string]int{"control plane": c.s.cmd.Process.Pid, "node": c.nodes["n1"].cmd.Process.Pid}
	for _, step := range []string{"upload", "download"} {
		base := map[string]int64{}
		for name, pid := range procs {
			base[name] = rssKB(t, pid, "VmRSS")
		}
		peak := map[string]int64{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				for name, pid := range procs {
					kb, _ := statusKB(pid, "VmRSS") // 0 if unread: the sampler cannot fail the test
					peak[name] = max(peak[name], kb)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		start := time.Now()
		h := sha256.New()
		var n int64
		var err error
		if step == "upload" {
			n, err = c.admin.WriteFile(ctx, sb.ID, "big.bin", io.TeeReader(io.LimitReader(mrand.NewChaCha8([32]byte{1}), size), h), 0o644)
		} else {
			n, err = c.admin.ReadFile(ctx, sb.ID, "big.bin", h)
		}
		close(stop)
		wg.Wait()
		if err != nil || n != size {
			t.Fatalf("%s: %d bytes, %v", step, n, err)
		}
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Fatalf("%s: the bytes differ", step)
		}
		t.Logf("%s of 1 GiB in %s; resident set growth: control plane %d MiB, node %d MiB", step, time.Since(start).Round(time.Millisecond),
			(peak["control plane"]-base["control plane"])>>10, (peak["node"]-base["node"])>>10)
		for name := range procs {
			if grew := peak[name] - base[name]; grew > bound {
				t.Errorf("%s: the %s's resident set grew by %d MiB (bound %d MiB)", step, name, grew>>10, bound>>10)
			}
		}
	}
	c.admin.DeleteSandbox(ctx, sb.ID)
}
