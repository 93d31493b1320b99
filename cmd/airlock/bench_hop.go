package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// hopCycles runs n create -> exec true -> delete cycles through the HTTP
// API of a control plane with no runtime of its own, whose sandboxes go
// to one node: both in this process, on loopback, on data dirs of their
// own (removed after), the node joined with a token as airlock node
// would. What it adds to the API's cycle is the node hop: placement, the
// node API over mutual TLS, the runtime's calls relayed. overhead is
// each cycle less the time the node spent in its runtime's calls: the
// API's overhead and the hop's.
func hopCycles(ctx context.Context, n int) (cycles, overhead []time.Duration, err error) {
	cp, err := startBenchServer(ctx, 0, nil, daemonTuning{noLocalNode: true})
	if err != nil {
		return nil, nil, err
	}
	defer cp.close()
	c := cp.c
	tok, err := c.CreateJoinToken(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	nodeDir, err := os.MkdirTemp("", "airlock-bench-node-")
	if err != nil {
		return nil, nil, err
	}
	os.Chmod(nodeDir, 0o711)
	defer func() {
		unix.Unmount(filepath.Join(nodeDir, "sandboxes"), unix.MNT_DETACH)
		os.RemoveAll(nodeDir)
	}()
	nln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	id, err := nodes.Join(ctx, nodes.JoinOptions{ControlPlane: cp.url, Token: tok.Token, CAHash: tok.CAHash, Name: "bench", Addr: nln.Addr().String(), DataDir: nodeDir})
	if err != nil {
		nln.Close()
		return nil, nil, err
	}
	rt, err := linux.New(linux.Config{StateDir: nodeDir})
	if err != nil {
		nln.Close()
		return nil, nil, err
	}
	defer rt.Teardown()
	var inNode atomic.Int64 // ns the node spent in its runtime's calls
	nsrv := nodeServerOf(id, rt, timedRuntime{rt, &inNode}, nodeDir, 0)
	go nsrv.ServeTLS(nln, "", "")
	defer nsrv.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if nd, err := c.GetNode(ctx, "bench"); err == nil && nd.State == nodes.StateReady {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("the node did not become ready within 30 s")
		}
	}
	var d, over []time.Duration
	for i := range n {
		if err := interrupted(ctx); err != nil {
			return nil, nil, err
		}
		inNode.Store(0)
		t0 := time.Now()
		s, err := c.CreateSandbox(ctx, client.CreateRequest{})
		if err != nil {
			return nil, nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if _, err := c.Exec(ctx, s.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return nil, nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		if err := c.DeleteSandbox(ctx, s.ID); err != nil {
			return nil, nil, fmt.Errorf("cycle %d: %w", i, err)
		}
		took := time.Since(t0)
		d = append(d, took)
		over = append(over, took-time.Duration(inNode.Load()))
	}
	return d, over, nil
}
