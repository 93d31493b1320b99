package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// hopSplit is where one hop cycle's time went.
type hopSplit struct {
	total     time.Duration
	client    time.Duration // between the API client and the control plane's handler
	cp        time.Duration // in the control plane's handlers, less its node calls
	transport time.Duration // the node calls, less their time in the node API's handlers
	node      time.Duration // in the node API's handlers, less its runtime's calls
	inRuntime time.Duration // in the node's runtime calls
}

// overhead is the cycle less the node's runtime calls.
func (h hopSplit) overhead() time.Duration { return h.total - h.inRuntime }

// timed wraps h to add the time each call spends in it to spent.
func timed(spent *atomic.Int64) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t := time.Now()
			h.ServeHTTP(w, r)
			spent.Add(int64(time.Since(t)))
		})
	}
}

// hopCycles runs n create -> exec true -> delete cycles through the HTTP
// API of a control plane with no runtime of its own, whose sandboxes go
// to one node: both in this process, on loopback, on data dirs of their
// own (removed after), the node joined with a token as airlock node
// would. What it adds to the API's cycle is the node hop: placement, the
// node API over mutual TLS, the runtime's calls relayed. Each cycle is
// split by where its time went: the client's HTTP to the control plane,
// the control plane's handlers, its calls to the node (transport: HTTP/2
// and TLS both ways), the node API's handlers and the node's runtime.
func hopCycles(ctx context.Context, n int) ([]hopSplit, error) {
	var inCP, inCalls, inHandler atomic.Int64
	cp, err := startBenchServerWrapped(ctx, 0, nil, daemonTuning{noLocalNode: true}, timed(&inCP),
		func(rt runtime.Runtime) runtime.Runtime { return timedRuntime{rt, &inCalls} })
	if err != nil {
		return nil, err
	}
	defer cp.close()
	c := cp.c
	tok, err := c.CreateJoinToken(ctx, 0)
	if err != nil {
		return nil, err
	}
	nodeDir, err := os.MkdirTemp("", "airlock-bench-node-")
	if err != nil {
		return nil, err
	}
	os.Chmod(nodeDir, 0o711)
	defer func() {
		unix.Unmount(filepath.Join(nodeDir, "sandboxes"), unix.MNT_DETACH)
		os.RemoveAll(nodeDir)
	}()
	nln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	id, err := nodes.Join(ctx, nodes.JoinOptions{ControlPlane: cp.url, Token: tok.Token, CAHash: tok.CAHash, Name: "bench", Addr: nln.Addr().String(), DataDir: nodeDir})
	if err != nil {
		nln.Close()
		return nil, err
	}
	rt, err := linux.New(linux.Config{StateDir: nodeDir})
	if err != nil {
		nln.Close()
		return nil, err
	}
	defer rt.Teardown()
	eh, err := egresshost.New(nodeDir, egress.Config{}, rt)
	if err != nil {
		nln.Close()
		return nil, err
	}
	defer eh.Close()
	var inNode atomic.Int64 // ns the node spent in its runtime's calls
	nsrv := nodeServerOf(id, rt, timedRuntime{rt, &inNode}, eh, nodeDir, 0)
	nsrv.Handler = timed(&inHandler)(nsrv.Handler)
	go nsrv.ServeTLS(nln, "", "")
	defer nsrv.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if nd, err := c.GetNode(ctx, "bench"); err == nil && nd.State == nodes.StateReady {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the node did not become ready within 30 s")
		}
	}
	var out []hopSplit
	for i := range n {
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		inNode.Store(0)
		inCP.Store(0)
		inCalls.Store(0)
		inHandler.Store(0)
		t0 := time.Now()
		s, err := c.CreateSandbox(ctx, client.CreateRequest{})
		if err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if _, err := c.Exec(ctx, s.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if err := c.DeleteSandbox(ctx, s.ID); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		took := time.Since(t0)
		// inHandler also counts a heartbeat's status call that falls in
		// the cycle (about 0.4 ms every 3 s): the odd cycle's tail only.
		rt, h := time.Duration(inNode.Load()), time.Duration(inHandler.Load())
		cpt, calls := time.Duration(inCP.Load()), time.Duration(inCalls.Load())
		out = append(out, hopSplit{total: took, client: took - cpt, cp: cpt - calls, transport: calls - h, node: h - rt, inRuntime: rt})
	}
	return out, nil
}

// column is one field of each split.
func column(s []hopSplit, f func(hopSplit) time.Duration) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}
