package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/airlockhq/airlock/internal/testenv"
)

// fastElection is short enough for a test, in the proportions of the
// defaults.
var fastElection = ElectorOptions{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 300 * time.Millisecond}

// cuttable is a connection to the API server that the test can cut, as
// a network partition would.
type cuttable struct {
	rt  http.RoundTripper
	cut atomic.Bool
}

func (c *cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut by the test")
	}
	return c.rt.RoundTrip(r)
}

// cuttableKube is a client of its own on the suite's kube-apiserver,
// with its connection's switch.
func cuttableKube(t *testing.T) (*Kube, *cuttable) {
	t.Helper()
	_, conf, err := Connect(testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &cuttable{}
	conf = rest.CopyConfig(conf)
	conf.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { c.rt = rt; return c }
	k, err := NewKube(conf)
	if err != nil {
		t.Fatal(err)
	}
	return k, c
}

// watchOverlap fails t if two of rs ever lead at once, until t ends.
func watchOverlap(t *testing.T, rs []*running) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if l := leaders(rs); len(l) > 1 {
				t.Errorf("%s and %s lead at once", l[0].id, l[1].id)
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

// TestLeaseElectorPartitionedLeader: a leader cut off from the API
// server (it stops renewing, as a hung or partitioned process does)
// steps down within its renew deadline, before a follower takes the
// Lease, which one does within a lease duration and a retry period of
// the cut. Back, the old leader follows.
func TestLeaseElectorPartitionedLeader(t *testing.T) {
	_, ns := kubeNamespace(t)
	var rs []*running
	cuts := map[string]*cuttable{}
	for i := range 3 {
		id := fmt.Sprintf("replica-%d", i)
		k, c := cuttableKube(t)
		e, err := NewLeaseElector(k, ns, "airlock-leader", id, fastElection)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, run(t, id, e))
		cuts[id] = c
	}
	watchOverlap(t, rs)
	leader := checkOneLeader(t, rs, 5*time.Second)
	cut := time.Now()
	cuts[leader.id].cut.Store(true)
	waitFor(t, fastElection.RenewDeadline+200*time.Millisecond, "the cut-off leader steps down", func() bool { return !leader.IsLeader() })
	t.Logf("%s stepped down %s after the cut", leader.id, time.Since(cut).Round(time.Millisecond))
	rest := slices.DeleteFunc(slices.Clone(rs), func(r *running) bool { return r == leader })
	waitFor(t, time.Until(cut.Add(fastElection.LeaseDuration+fastElection.RetryPeriod+500*time.Millisecond)),
		"a follower leads after the leader stopped renewing", func() bool { return len(leaders(rest)) > 0 })
	t.Logf("a follower led %s after the cut", time.Since(cut).Round(time.Millisecond))
	cuts[leader.id].cut.Store(false)
	next := checkOneLeader(t, rs, time.Second)
	if next == leader {
		t.Error("the old leader leads again")
	}
}

// TestLeaseElectorExpiredLease: three candidates that find a Lease held
// by a dead process wait out its duration on their own clocks (its
// renewTime, from a clock an hour fast, is not believed), then race to
// take it: one wins, the others' writes conflict, and it was taken once.
func TestLeaseElectorExpiredLease(t *testing.T) {
	k, ns := kubeNamespace(t)
	ctx := context.Background()
	future := metav1.NewMicroTime(time.Now().Add(time.Hour))
	ghost := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "airlock-leader"}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr("ghost"), LeaseDurationSeconds: ptr(int32(3600)), AcquireTime: &future, RenewTime: &future, LeaseTransitions: ptr(int32(4))}}
	if _, err := k.createLease(ctx, ns, ghost); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var rs []*running
	for i := range 3 {
		id := fmt.Sprintf("replica-%d", i)
		e, err := NewLeaseElector(k, ns, "airlock-leader", id, fastElection)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, run(t, id, e))
	}
	watchOverlap(t, rs)
	waitFor(t, 2*time.Second, "the candidates name the ghost", func() bool {
		for _, r := range rs {
			if r.Leader() != "ghost" {
				return false
			}
		}
		return true
	})
	waitFor(t, fastElection.LeaseDuration+fastElection.RetryPeriod+time.Second, "a leader", func() bool { return len(leaders(rs)) > 0 })
	if took := time.Since(start); took < fastElection.LeaseDuration {
		t.Errorf("the ghost's Lease was taken %s after the candidates saw it, before its duration", took)
	}
	leader := checkOneLeader(t, rs, time.Second)
	lease, err := k.getLease(ctx, ns, "airlock-leader")
	if err != nil {
		t.Fatal(err)
	}
	if holder(lease) != leader.id || *lease.Spec.LeaseTransitions != 5 || *lease.Spec.LeaseDurationSeconds != 3 {
		t.Errorf("the Lease taken from the ghost: %+v", lease.Spec)
	}
}

// TestNewLeaseElector: timings under which a leader could not step down
// before another takes over are refused.
func TestNewLeaseElector(t *testing.T) {
	for _, o := range []ElectorOptions{
		{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
		{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 2 * time.Second},
	} {
		if _, err := NewLeaseElector(nil, "ns", "x", "id", o); err == nil {
			t.Errorf("an elector with %+v was made", o)
		}
	}
	if _, err := NewLeaseElector(nil, "ns", "x", "", ElectorOptions{}); err == nil {
		t.Error("an elector with no identity was made")
	}
}
