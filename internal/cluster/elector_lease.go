package cluster

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseElector elects a leader with a Kubernetes Lease
// (coordination.k8s.io/v1) through client-go's leaderelection: the leader
// renews the Lease every RetryPeriod and steps down when it could not for
// RenewDeadline; a follower takes a Lease not renewed for LeaseDuration.
// A leader that stops (Run's context ends) releases the Lease at once.
type LeaseElector struct {
	*leadership
	lock *resourcelock.LeaseLock
	opts ElectorOptions

	mu sync.Mutex
	le *leaderelection.LeaderElector // the current round's
}

// NewLeaseElector makes an elector on the Lease name in namespace, for
// this process as identity (unique among the candidates: a pod name).
func NewLeaseElector(cs kubernetes.Interface, namespace, name, identity string, opts ElectorOptions) (*LeaseElector, error) {
	opts.defaults()
	if identity == "" {
		return nil, fmt.Errorf("lease elector %s: identity is empty", name)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	e := &LeaseElector{leadership: newLeadership(), lock: lock, opts: opts}
	// Check the timings now, not in Run.
	if _, err := e.round(func(context.Context) {}, func() {}); err != nil {
		return nil, fmt.Errorf("lease elector %s: %w", name, err)
	}
	return e, nil
}

func (e *LeaseElector) round(started func(context.Context), stopped func()) (*leaderelection.LeaderElector, error) {
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		LeaseDuration:   e.opts.LeaseDuration,
		RenewDeadline:   e.opts.RenewDeadline,
		RetryPeriod:     e.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.lock.LeaseMeta.Name,
		Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: started, OnStoppedLeading: stopped},
	})
}

// Run campaigns until ctx ends: a leader that loses its Lease (it could
// not renew it in time) is a candidate again at once. When ctx ends the
// Lease is released and Changes closed.
func (e *LeaseElector) Run(ctx context.Context) {
	defer e.close()
	for ctx.Err() == nil {
		// client-go starts OnStartedLeading on a goroutine of its own and
		// calls OnStoppedLeading as Run returns: a start that runs after
		// the stop must not make this process a leader again.
		var mu sync.Mutex
		stopped := false
		le, err := e.round(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				e.opts.Logger.Info("leading", "lease", e.lock.LeaseMeta.Name, "identity", e.lock.Identity())
				e.set(true)
			}
		}, func() {
			mu.Lock()
			stopped = true
			mu.Unlock()
			if e.IsLeader() {
				e.opts.Logger.Info("stopped leading", "lease", e.lock.LeaseMeta.Name, "identity", e.lock.Identity())
			}
			e.set(false)
		})
		if err != nil {
			e.opts.Logger.Error("lease elector", "err", err)
			return
		}
		e.mu.Lock()
		e.le = le
		e.mu.Unlock()
		le.Run(ctx)
	}
}

// Leader is the holder of the Lease as this process last read it.
func (e *LeaseElector) Leader() string {
	e.mu.Lock()
	le := e.le
	e.mu.Unlock()
	if le == nil {
		return ""
	}
	return le.GetLeader()
}
