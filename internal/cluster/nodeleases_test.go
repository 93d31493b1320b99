package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
)

// TestNodeLeases: a node's Lease carries what it registers and is found
// by its label; drained is an operator's mark (the control plane's),
// which renewals and a new registration (a restarted node) keep until it
// is taken away; draining is the pod's preStop mark, which renewals keep
// and a new registration clears; a Lease not
// renewed for its duration has expired, and Run keeps one live.
func TestNodeLeases(t *testing.T) {
	cs, ns := kubeNamespace(t)
	ctx := context.Background()
	l := NewNodeLeases(cs, ns)
	l.Duration = 2 * time.Second
	n1 := NodeLease{Name: "ip-10-0-0-1.ec2.internal", Addr: "10.0.0.1:7443", Version: "v1.2.3", Protocol: nodes.Protocol,
		Capacity: nodes.Capacity{CPUs: 4, MemoryMB: 8192, DiskMB: 100000, Sandboxes: 256}, Use: nodes.Use{CPUs: 0.5, MemoryMB: 1000, DiskMB: 10, Sandboxes: 3}}
	if err := l.Register(ctx, n1); err != nil {
		t.Fatal(err)
	}
	list := func() []NodeLease {
		t.Helper()
		got, err := l.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	ignoreTimes := cmpopts.IgnoreFields(NodeLease{}, "RenewedAt", "CreatedAt")
	want := n1
	want.Duration = 2 * time.Second
	if diff := cmp.Diff([]NodeLease{want}, list(), ignoreTimes); diff != "" {
		t.Errorf("leases (-want +got):\n%s", diff)
	}
	got := list()[0]
	if time.Since(got.RenewedAt) > time.Second || got.Expired(time.Now()) {
		t.Errorf("a Lease just registered: renewed at %s, expired %v", got.RenewedAt, got.Expired(time.Now()))
	}
	lease, err := cs.getLease(ctx, ns, "airlock-node-"+n1.Name)
	if err != nil || *lease.Spec.HolderIdentity != n1.Name || lease.Labels["app.kubernetes.io/component"] != "airlock-node" {
		t.Errorf("the Lease as Kubernetes has it: %+v, %v", lease, err)
	}

	if err := l.SetDraining(ctx, n1.Name, true); err != nil {
		t.Fatal(err)
	}
	n1.Use.Sandboxes = 1
	if err := l.Renew(ctx, n1); err != nil {
		t.Fatal(err)
	}
	if got := list()[0]; !got.Draining || got.Use.Sandboxes != 1 {
		t.Errorf("after drain and a renewal: draining %v, sandboxes %d", got.Draining, got.Use.Sandboxes)
	}
	if err := l.Register(ctx, n1); err != nil {
		t.Fatal(err)
	}
	if got := list()[0]; got.Draining {
		t.Error("a node registered again is still draining")
	}
	if err := l.SetDraining(ctx, "nobody", true); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("drain a node with no Lease: %v, want not found", err)
	}

	// Drained through the API: the node's restarts keep it so; the
	// pod's preStop mark goes with a restart.
	for _, step := range []struct {
		what              string
		do                func() error
		drained, draining bool
	}{
		{"drained through the API", func() error { return l.SetDrained(ctx, n1.Name, true) }, true, false},
		{"renewed", func() error { return l.Renew(ctx, n1) }, true, false},
		{"registered again (restarted)", func() error { return l.Register(ctx, n1) }, true, false},
		{"drained by its preStop", func() error { return l.SetDraining(ctx, n1.Name, true) }, true, true},
		{"registered again after its preStop", func() error { return l.Register(ctx, n1) }, true, false},
		{"undrained through the API", func() error { return l.SetDrained(ctx, n1.Name, false) }, false, false},
		{"registered again, undrained", func() error { return l.Register(ctx, n1) }, false, false},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if got := list()[0]; got.Drained != step.drained || got.Draining != step.draining {
			t.Errorf("%s: drained %v, draining %v; want %v, %v", step.what, got.Drained, got.Draining, step.drained, step.draining)
		}
	}
	if err := l.SetDrained(ctx, "nobody", true); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("drain a node with no Lease through the API: %v, want not found", err)
	}
	if err := l.Register(ctx, NodeLease{Name: "Bad_Name"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("register a bad name: %v, want invalid", err)
	}

	waitFor(t, 5*time.Second, "the Lease expires", func() bool { return list()[0].Expired(time.Now()) })

	// Run renews: it stays live past its duration.
	l.RenewEvery = 200 * time.Millisecond
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(rctx, func(context.Context) (NodeLease, error) { return n1, nil })
	}()
	waitFor(t, 5*time.Second, "Run renews the Lease", func() bool { return !list()[0].Expired(time.Now()) })
	time.Sleep(l.Duration + 500*time.Millisecond)
	if list()[0].Expired(time.Now()) {
		t.Error("a Lease Run renews expired")
	}
	stop()
	<-done
	// A stop leaves the Lease, to expire.
	if got := list(); len(got) != 1 {
		t.Fatalf("leases after Run stopped: %v", got)
	}
	waitFor(t, 5*time.Second, "the Lease expires after Run stopped", func() bool { return list()[0].Expired(time.Now()) })
	if err := l.Delete(ctx, n1.Name); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Errorf("leases after delete: %v", got)
	}
}
