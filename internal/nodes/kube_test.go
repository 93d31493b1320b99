package nodes_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime"
)

// leases is an in-memory nodes.Discovery: the Leases as cluster.NodeLeases
// reads them, renewed by the test.
type leases struct {
	mu sync.Mutex
	m  map[string]nodes.Lease
}

func (l *leases) List(context.Context) ([]nodes.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []nodes.Lease
	for _, v := range l.m {
		out = append(out, v)
	}
	return out, nil
}

func (l *leases) SetDrained(_ context.Context, name string, drained bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[name]
	if !ok {
		return fmt.Errorf("%w: no lease %s", errdefs.ErrNotFound, name)
	}
	v.Drained = drained
	l.m[name] = v
	return nil
}

// set changes the node's Lease as its node or its pod's preStop would.
func (l *leases) set(name string, change func(*nodes.Lease)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.m[name]
	change(&v)
	l.m[name] = v
}

func (l *leases) Delete(_ context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, name)
	return nil
}

func (l *leases) renew(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.m[name]
	v.RenewedAt = time.Now()
	l.m[name] = v
}

// newCAs makes a cluster's CAs: the control plane's view, and a node's.
func newCAs(t *testing.T, now time.Time) (*nodes.ClusterCAs, nodes.NodeCAs) {
	t.Helper()
	cpCert, cpKey, err := nodes.NewCAPEM(nodes.ControlPlaneCAName, now)
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, nodeKey, err := nodes.NewCAPEM(nodes.ClusterNodeCAName, now)
	if err != nil {
		t.Fatal(err)
	}
	return &nodes.ClusterCAs{ControlPlaneCert: cpCert, ControlPlaneKey: cpKey, NodeCert: nodeCert},
		nodes.NodeCAs{NodeCert: nodeCert, NodeKey: nodeKey, ControlPlaneCert: cpCert}
}

// TestLeaseDiscovered: a Service whose nodes register with Leases takes a
// node as ready while its Lease is renewed (with the figures its status
// answers over mutual TLS from the cluster's CAs), lost once the Lease is
// not renewed for its duration (its sandboxes fail past the grace
// period), and back when it is renewed again; drain marks the Lease;
// tokens and joins are refused.
func TestLeaseDiscovered(t *testing.T) {
	now := time.Now()
	cas, nodeCAs := newCAs(t, now)
	const name = "ip-10-0-0-1.ec2.internal"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	id, err := nodes.ClusterIdentity(nodeCAs, name, ln.Addr().String(), now)
	if err != nil {
		t.Fatal(err)
	}
	status := func(context.Context) (nodes.Status, error) {
		return nodes.Status{Name: name, Version: "test", Protocol: nodes.Protocol, Capacity: nodes.Capacity{CPUs: 2, Sandboxes: 10}, Use: nodes.Use{Sandboxes: 2}}, nil
	}
	srv := &http.Server{Handler: nodes.StatusHandler(status), TLSConfig: id.ServerTLS()}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })

	ls := &leases{m: map[string]nodes.Lease{name: {Name: name, Addr: ln.Addr().String(), Version: "test", Protocol: nodes.Protocol,
		Capacity: nodes.Capacity{CPUs: 2, Sandboxes: 10}, Use: nodes.Use{Sandboxes: 1}, RenewedAt: now, Duration: time.Second, CreatedAt: now}}}
	var renewing sync.Mutex // held while renewals are paused
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			renewing.Lock()
			ls.renew(name)
			renewing.Unlock()
			select {
			case <-stopRenew:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stopRenew); <-renewed })

	var mu sync.Mutex
	var back, gone []string
	svc, err := nodes.New(context.Background(), nil, nil, nodes.Options{HeartbeatEvery: 200 * time.Millisecond, LostAfter: time.Hour, Grace: 300 * time.Millisecond,
		Discovery: ls, ClusterCAs: cas,
		Client: func(*http.Client, string) runtime.Runtime { return nil },
		OnBack: func(n string) { mu.Lock(); back = append(back, n); mu.Unlock() },
		OnGone: func(n, why string) { mu.Lock(); gone = append(gone, n+": "+why); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	ctx := context.Background()
	wait := func(state string, cond func(nodes.Node) bool) nodes.Node {
		t.Helper()
		var n nodes.Node
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if n, err = svc.Get(ctx, name); err == nil && n.State == state && (cond == nil || cond(n)) {
				return n
			}
		}
		t.Fatalf("node: state %q (last error %q, err %v), want %s", n.State, n.LastError, err, state)
		return n
	}
	calls := func(what string, list *[]string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(*list)
	}

	// Ready, as its Lease says; placed on with the figures it answered
	// over mutual TLS (2 sandboxes, where its Lease says 1).
	n := wait(nodes.StateReady, nil)
	if n.Addr != ln.Addr().String() || n.Capacity.Sandboxes != 10 || n.Version != "test" {
		t.Errorf("ready node: %+v", n)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p, _ := svc.Placeable(ctx)
		if len(p) == 1 && p[0].Use.Sandboxes == 2 {
			break
		}
		if time.Now().After(deadline) {
			n, _ := svc.Get(ctx, name)
			t.Fatalf("placeable: %v, want the node with its heartbeat's figures (last error %q)", p, n.LastError)
		}
	}
	waitCalls(t, func() []string { return calls("back", &back) }, []string{name})

	// Renewals stop: lost (the node's API still answers: liveness is the
	// Lease's), then gone past the grace period.
	renewing.Lock()
	wait(nodes.StateLost, nil)
	if why, lost := svc.Lost(name); !lost {
		t.Errorf("Lost: %q, %v", why, lost)
	}
	if _, err := svc.Runtime(ctx, name); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("runtime of a lost node: %v", err)
	}
	if p, _ := svc.Placeable(ctx); len(p) != 0 {
		t.Errorf("placeable while lost: %v", p)
	}
	waitCalls(t, func() []string { return calls("gone", &gone) }, []string{name + ": node lost"})

	// Renewed again: back.
	renewing.Unlock()
	wait(nodes.StateReady, nil)
	waitCalls(t, func() []string { return calls("back", &back) }, []string{name, name})

	if _, err := svc.Drain(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	wait(nodes.StateDraining, nil)
	if l, _ := ls.List(ctx); !l[0].Drained || l[0].Draining {
		t.Errorf("drain marked the Lease drained %v, draining %v; want the operator's mark alone", l[0].Drained, l[0].Draining)
	}
	if p, _ := svc.Placeable(ctx); len(p) != 0 {
		t.Errorf("placeable while draining: %v", p)
	}
	if _, err := svc.Drain(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	wait(nodes.StateReady, nil)
	// The pod's preStop marks it draining too, apart from the operator's
	// mark; the node's next process takes that mark away.
	ls.set(name, func(l *nodes.Lease) { l.Draining = true })
	wait(nodes.StateDraining, nil)
	ls.set(name, func(l *nodes.Lease) { l.Draining = false })
	wait(nodes.StateReady, nil)

	if _, err := svc.MintToken(ctx, 0); !errors.Is(err, nodes.ErrRegistersItself) {
		t.Errorf("mint a token: %v", err)
	}
	if _, err := svc.Join(ctx, nodes.JoinRequest{Name: "x"}); !errors.Is(err, nodes.ErrRegistersItself) {
		t.Errorf("join: %v", err)
	}
	if err := svc.Remove(ctx, name, true); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("remove a node that renews its Lease: %v, want a conflict", err)
	}
	if list, err := svc.List(ctx); err != nil || len(list) != 1 || list[0].Name != name {
		t.Errorf("list: %v, %v", list, err)
	}
}

func waitCalls(t *testing.T, got func() []string, want []string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if slices.Equal(got(), want) {
			return
		}
	}
	t.Errorf("calls: %v, want %v", got(), want)
}

// TestLeaseLivenessOnOwnClock: a node Lease is live while the control
// plane sees its renewTime change, on the control plane's clock, whatever
// the node's clock says: a node whose clock runs an hour ahead is lost
// once its renewals stop, and one whose clock runs an hour behind is live
// while it renews.
func TestLeaseLivenessOnOwnClock(t *testing.T) {
	now := time.Now()
	cas, _ := newCAs(t, now)
	skew := map[string]time.Duration{"ahead": time.Hour, "behind": -time.Hour}
	ls := &leases{m: map[string]nodes.Lease{}}
	for name, d := range skew {
		// Nobody serves there: the nodes stay joining while live.
		ls.m[name] = nodes.Lease{Name: name, Addr: "127.0.0.1:1", Protocol: nodes.Protocol, RenewedAt: now.Add(d), Duration: time.Second, CreatedAt: now}
	}
	var renewing sync.Map // name -> true while its node renews
	renewing.Store("ahead", true)
	renewing.Store("behind", true)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for name, d := range skew {
				if _, ok := renewing.Load(name); ok {
					ls.set(name, func(l *nodes.Lease) { l.RenewedAt = time.Now().Add(d) })
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	svc, err := nodes.New(context.Background(), nil, nil, nodes.Options{HeartbeatEvery: 100 * time.Millisecond, LostAfter: time.Hour,
		Discovery: ls, ClusterCAs: cas,
		Client: func(*http.Client, string) runtime.Runtime { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	state := func(name string) string {
		n, err := svc.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return n.State
	}
	// live: not lost (joining or ready: the heartbeats' view, which
	// is not what this test is about).
	waitFor := func(name string, live bool) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got = state(name); (got != nodes.StateLost) == live {
				return
			}
		}
		t.Fatalf("node %s: %s, want live %v", name, got, live)
	}

	// Both renew: live, the one behind too, for longer than its Lease's
	// duration.
	waitFor("behind", true)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for name := range skew {
			if s := state(name); s == nodes.StateLost {
				t.Fatalf("node %s renewing with its clock %s off: lost", name, skew[name])
			}
		}
	}
	// The one ahead stops: lost within about its duration, though its
	// last renewTime is still an hour in this clock's future.
	renewing.Delete("ahead")
	waitFor("ahead", false)
	if s := state("behind"); s == nodes.StateLost {
		t.Error("node behind, renewing: lost")
	}
	// Back: seen renewed again, live again.
	renewing.Store("ahead", true)
	waitFor("ahead", true)
}

// TestClusterCertRenewal: an in-cluster node issues its own serving
// certificate again once a third of its year is left (it does not wait
// for a restart), retries a CA it cannot read, and serves the new
// certificate to the control plane's next connection.
func TestClusterCertRenewal(t *testing.T) {
	now := time.Now()
	cas, nodeCAs := newCAs(t, now.Add(-400*24*time.Hour))
	const name = "worker-1"
	id, err := nodes.ClusterIdentity(nodeCAs, name, "127.0.0.1:1", now.Add(-300*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	first := id.CertExpiresAt()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) bool {
		waits = append(waits, d)
		if len(waits) == 4 {
			cancel()
			return false
		}
		return true
	}
	loads := 0
	load := func(context.Context) (nodes.NodeCAs, error) {
		loads++
		if loads == 1 {
			return nodes.NodeCAs{}, errors.New("secret airlock-node-ca: forbidden")
		}
		return nodeCAs, nil
	}
	nodes.RenewClusterCert(ctx, id, load, func() time.Time { return now }, sleep, slog.New(slog.DiscardHandler))

	// Due at once (65 days left of 365); the CA unreadable: a retry a
	// minute on; read: renewed, and the next due two thirds of a year on.
	if len(waits) != 4 || waits[0] != 0 || waits[1] != nodes.ClusterRenewRetry || waits[2] != 0 ||
		waits[3] < 240*24*time.Hour || waits[3] > 245*24*time.Hour {
		t.Errorf("waits %v: want 0, the retry, 0, then about 243 days", waits)
	}
	if got := id.CertExpiresAt().Sub(first); got < 299*24*time.Hour {
		t.Errorf("renewed certificate ends %s after the first, want about 300 days", got)
	}

	// The control plane's next connection is served the new certificate.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), TLSConfig: id.ServerTLS()}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	conf, err := cas.ClientTLS(name, now)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", ln.Addr().String(), conf)
	if err != nil {
		t.Fatalf("the control plane's handshake with the renewed node: %v", err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].NotAfter; !got.Equal(id.CertExpiresAt()) {
		t.Errorf("served a certificate ending %s, want the renewed one ending %s", got, id.CertExpiresAt())
	}
}
