package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/cluster"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/nodes"
)

// nodeKubeConfig is what airlock node --kubernetes runs with.
type nodeKubeConfig struct {
	name, addr, dataDir string
	maxSandboxes, pool  int
	hostRoot            string
	egress              egress.Config // the sandboxes' proxies'
}

// nodeKube runs an in-cluster node until ctx ends: its identity from the
// cluster's node CA, its membership a Lease it renews. On SIGTERM it just
// stops: the sandboxes run on and the Lease expires unless the node's
// next process (an upgrade) renews it first.
func nodeKube(ctx context.Context, k *kubeConfig, c nodeKubeConfig) error {
	if c.name == "" {
		c.name = os.Getenv("NODE_NAME")
	}
	if c.name == "" {
		return badInput("node", "--kubernetes: give --name, or set $NODE_NAME (the downward API's spec.nodeName)")
	}
	if err := nodes.CheckClusterName(c.name); err != nil {
		return badInput("node", "--name: %v", err)
	}
	cs, err := k.client()
	if err != nil {
		return err
	}
	ns := k.ns()
	said := false
	cas, err := cluster.WaitNodeCAs(ctx, cs, ns, 2*time.Second, func(err error) {
		if !said {
			fmt.Fprintf(os.Stderr, "airlock: waiting for the control plane's node CA (%v)\n", err)
			said = true
		}
	})
	if err != nil {
		return err
	}
	id, err := nodes.ClusterIdentity(*cas, c.name, c.addr, time.Now())
	if err != nil {
		return err
	}
	rt, closeRT, err := openNodeRuntime(c.dataDir, c.pool, c.hostRoot)
	if err != nil {
		return err
	}
	defer closeRT()
	eh, err := egresshost.New(c.dataDir, c.egress, rt)
	if err != nil {
		return err
	}
	defer eh.Close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := nodeServer(id, rt, eh, c.dataDir, c.maxSandboxes)
	status := nodeStatus(c.name, rt, c.dataDir, c.maxSandboxes)
	leases := cluster.NewNodeLeases(cs, ns)
	leaseCtx, stopLease := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		leases.Run(leaseCtx, func(ctx context.Context) (cluster.NodeLease, error) {
			st, err := status(ctx)
			return cluster.NodeLease{Name: c.name, Addr: c.addr, Version: st.Version, Protocol: st.Protocol, Capacity: st.Capacity, Use: st.Use}, err
		})
	})
	// The certificate is issued again before it ends: a node may run for
	// longer than its year.
	wg.Go(func() {
		load := func(ctx context.Context) (nodes.NodeCAs, error) {
			cas, err := cluster.NodeCAs(ctx, cs, ns)
			if err != nil {
				return nodes.NodeCAs{}, err
			}
			return *cas, nil
		}
		nodes.RenewClusterCert(leaseCtx, id, load, time.Now, cluster.Sleep, slog.Default())
	})
	defer func() {
		stopLease()
		wg.Wait()
	}()
	fmt.Printf("airlock: node %s serving the node API on https://%s, registered with Lease %s/airlock-node-%s (data in %s)\n", c.name, ln.Addr(), ns, c.name, c.dataDir)
	err = serveUntil(ctx, srv, func() error { return srv.ServeTLS(ln, "", "") }, "airlock: node shutting down", 2*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	return err
}

// nodeDrainCmd is airlock node drain: the DaemonSet pod's preStop.
func nodeDrainCmd(args []string) error {
	fs := flag.NewFlagSet("node drain", flag.ContinueOnError)
	kube := kubeFlags(fs)
	name := fs.String("name", os.Getenv("NODE_NAME"), "the node to drain (default $NODE_NAME)")
	var wait time.Duration
	durationVar(fs, &wait, "wait", 100*time.Second, 0, 24*time.Hour, "how long (`DURATION`) to wait for the node's sandboxes to end")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock node drain --kubernetes|--kubeconfig PATH [--namespace NS] --name NAME [--wait DURATION]\n\nMark an in-cluster node draining (it takes no new sandbox) and wait until it\nruns none, or --wait ends. It exits 0 either way, saying which.")
		printFlags(fs)
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if !kube.enabled() {
		return badInput("node drain", "give --kubernetes (in a pod) or --kubeconfig PATH: drain works on in-cluster nodes' Leases")
	}
	if err := nodes.CheckClusterName(*name); err != nil {
		return badInput("node drain", "--name: %v", err)
	}
	cs, err := kube.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+10*time.Second)
	defer cancel()
	leases := cluster.NewNodeLeases(cs, kube.ns())
	if err := leases.SetDraining(ctx, *name, true); err != nil {
		fmt.Printf("airlock: node %s: not drained: %v\n", *name, err)
		return nil
	}
	fmt.Printf("airlock: node %s draining: it takes no new sandbox\n", *name)
	return waitDrained(ctx, leases, *name, time.Now().Add(wait), 2*time.Second)
}

// waitDrained waits until the node's Lease says it runs no sandbox, its
// Lease expires (the node is gone), or deadline.
func waitDrained(ctx context.Context, leases *cluster.NodeLeases, name string, deadline time.Time, every time.Duration) error {
	for {
		l, err := leases.Get(ctx, name)
		switch {
		case err != nil:
			fmt.Printf("airlock: node %s: %v\n", name, err)
		case l.Use.Sandboxes == 0:
			fmt.Printf("airlock: node %s runs no sandbox\n", name)
			return nil
		case l.Expired(time.Now()):
			fmt.Printf("airlock: node %s stopped renewing its Lease (at %s) with %d sandboxes\n", name, l.RenewedAt.Format(time.RFC3339), l.Use.Sandboxes)
			return nil
		}
		if !time.Now().Add(every).Before(deadline) {
			n := "?"
			if err == nil {
				n = fmt.Sprint(l.Use.Sandboxes)
			}
			fmt.Printf("airlock: node %s still runs %s sandboxes: stopped waiting\n", name, n)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}
