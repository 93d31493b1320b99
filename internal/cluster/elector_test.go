package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestLeaseElector: of three candidates on one Lease exactly one leads
// and all name it; the leader stopped, another leads within a lease
// duration (at once: the Lease is released), and the stopped one saw
// true then false, its channel closed.
func TestLeaseElector(t *testing.T) {
	cs, ns := kubeNamespace(t)
	var rs []*running
	for i := range 3 {
		id := fmt.Sprintf("replica-%d", i)
		e, err := NewLeaseElector(cs, ns, "airlock-leader", id, ElectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, run(t, id, e))
	}
	leader := checkOneLeader(t, rs, 15*time.Second)
	leader.stop()
	if diff := cmp.Diff([]bool{true, false}, <-leader.seen); diff != "" {
		t.Errorf("the stopped leader's changes (-want +got):\n%s", diff)
	}
	rest := slices.DeleteFunc(slices.Clone(rs), func(r *running) bool { return r == leader })
	// Released, the Lease is taken at a follower's next try, well before
	// it would have expired.
	start := time.Now()
	waitFor(t, 2*DefaultRetryPeriod+time.Second, "a follower leads after the leader released the Lease", func() bool { return len(leaders(rest)) > 0 })
	t.Logf("took over from %s in %s", leader.id, time.Since(start).Round(time.Millisecond))
	next := checkOneLeader(t, rest, time.Second)
	lease, err := cs.getLease(context.Background(), ns, "airlock-leader")
	if err != nil {
		t.Fatal(err)
	}
	if holder(lease) != next.id || *lease.Spec.LeaseDurationSeconds != 15 || *lease.Spec.LeaseTransitions != 1 ||
		lease.Spec.AcquireTime == nil || lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Before(lease.Spec.AcquireTime) {
		t.Errorf("the Lease after one takeover: %+v", lease.Spec)
	}

	if _, err := NewLeaseElector(cs, ns, "x", "id", ElectorOptions{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}); err == nil {
		t.Error("an elector whose lease is shorter than its renew deadline was made")
	}
}

// TestPGElector: of three candidates on one advisory lock exactly one
// leads and all name it; when its session dies (terminated by the
// server) it steps down and another leads; when it stops, another leads.
func TestPGElector(t *testing.T) {
	url := testenv.NewDatabase(t)
	opts := ElectorOptions{RetryPeriod: 200 * time.Millisecond}
	var rs []*running
	for i := range 3 {
		id := fmt.Sprintf("replica-%d", i)
		e, err := NewPGElector(url, 42, id, opts)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, run(t, id, e))
	}
	// Another key is another election.
	other, err := NewPGElector(url, 43, "other", opts)
	if err != nil {
		t.Fatal(err)
	}
	o := run(t, "other", other)
	leader := checkOneLeader(t, rs, 10*time.Second)
	waitFor(t, 5*time.Second, "the leader of another key", o.IsLeader)

	// The leader's session ends under it.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed bool
	if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend(pid) FROM cluster_leader WHERE key = 42").Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the leader's session: %v, %v", killed, err)
	}
	waitFor(t, 2*time.Second, "the leader whose session ended steps down", func() bool { return !leader.IsLeader() })
	next := checkOneLeader(t, rs, 5*time.Second)
	t.Logf("after %s's session ended, %s leads", leader.id, next.id)

	next.stop()
	rest := slices.DeleteFunc(slices.Clone(rs), func(r *running) bool { return r == next })
	checkOneLeader(t, rest, 5*time.Second)
	if seen := <-next.seen; len(seen) == 0 || seen[len(seen)-1] {
		t.Errorf("the stopped leader's changes: %v, want ...true, false", seen)
	}
}
