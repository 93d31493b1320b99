package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseElector elects a leader with a Kubernetes Lease
// (coordination.k8s.io/v1), writing it as client-go's leaderelection
// does (the two may share a Lease): the leader renews the Lease every
// RetryPeriod and steps down when it could not for RenewDeadline; a
// follower takes a Lease that has not changed for LeaseDuration. A leader
// that stops (Run's context ends) releases the Lease, so another takes
// it at once.
//
// Whether a Lease has expired is judged on this process's clock alone,
// from when it saw the Lease change, never from the renewTime another
// host wrote: the hosts' clocks need not agree. Every write carries the
// resourceVersion it read, so of candidates that race one wins and the
// others get a conflict.
type LeaseElector struct {
	*leadership
	k                         *Kube
	namespace, name, identity string
	opts                      ElectorOptions

	// Of Run's goroutine alone: the Lease as last read or written, and
	// when (this process's clock) it was seen to change.
	lease    *coordinationv1.Lease
	observed time.Time
}

// errHeld: another holds the Lease, and it has not expired.
var errHeld = errors.New("held by another")

// NewLeaseElector makes an elector on the Lease name in namespace, for
// this process as identity (unique among the candidates: a pod name).
func NewLeaseElector(k *Kube, namespace, name, identity string, opts ElectorOptions) (*LeaseElector, error) {
	opts.defaults()
	if identity == "" {
		return nil, fmt.Errorf("lease elector %s: identity is empty", name)
	}
	// A leader must step down before a follower may take its Lease, and
	// get more than one try at renewing before it does.
	if opts.LeaseDuration <= opts.RenewDeadline {
		return nil, fmt.Errorf("lease elector %s: lease duration %s must be longer than the renew deadline %s", name, opts.LeaseDuration, opts.RenewDeadline)
	}
	if opts.RenewDeadline <= opts.RetryPeriod {
		return nil, fmt.Errorf("lease elector %s: renew deadline %s must be longer than the retry period %s", name, opts.RenewDeadline, opts.RetryPeriod)
	}
	return &LeaseElector{leadership: newLeadership(), k: k, namespace: namespace, name: name, identity: identity, opts: opts}, nil
}

// Run campaigns until ctx ends: a leader that loses its Lease (it could
// not renew it in time) is a candidate again at once. When ctx ends the
// Lease is released and Changes closed.
func (e *LeaseElector) Run(ctx context.Context) {
	defer e.close()
	for {
		acquired, ok := e.acquire(ctx)
		if !ok {
			break
		}
		e.opts.Logger.Info("leading", "lease", e.name, "identity", e.identity)
		e.set(true)
		e.renew(ctx, acquired)
		// Stop the leader's work before another may take over.
		e.set(false)
		e.opts.Logger.Info("stopped leading", "lease", e.name, "identity", e.identity)
		if ctx.Err() != nil {
			break
		}
	}
	e.release()
}

// acquire tries to take the Lease every RetryPeriod, or as soon as it
// expires, until it does (returning when the winning try began) or ctx
// ends.
func (e *LeaseElector) acquire(ctx context.Context) (time.Time, bool) {
	failing := false
	for {
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, e.opts.RenewDeadline)
		err := e.tryAcquireOrRenew(actx, start)
		cancel()
		if err == nil {
			return start, true
		}
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		if held := errors.Is(err, errHeld) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err); !held && !failing {
			e.opts.Logger.Warn("lease elector", "lease", e.name, "err", err)
			failing = true
		} else if held {
			failing = false
		}
		wait := e.opts.RetryPeriod
		if left := time.Until(e.observed.Add(e.opts.LeaseDuration)); errors.Is(err, errHeld) && left < wait {
			wait = max(left, 0) + time.Millisecond
		}
		if !Sleep(ctx, wait) {
			return time.Time{}, false
		}
	}
}

// renew renews the Lease every RetryPeriod until ctx ends or no renewal
// has succeeded for RenewDeadline (counted from when the last good one
// began: others count the Lease's duration from later than that).
func (e *LeaseElector) renew(ctx context.Context, last time.Time) {
	var lastErr error
	for {
		deadline := last.Add(e.opts.RenewDeadline)
		if !Sleep(ctx, min(e.opts.RetryPeriod, time.Until(deadline))) {
			return
		}
		start := time.Now()
		if !start.Before(deadline) {
			e.opts.Logger.Warn("lease elector: not renewed within the renew deadline", "lease", e.name, "deadline", e.opts.RenewDeadline, "err", lastErr)
			return
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		err := e.tryAcquireOrRenew(rctx, start)
		cancel()
		switch {
		case err == nil:
			last, lastErr = start, nil
		case ctx.Err() != nil:
			return
		case errors.Is(err, errHeld):
			e.opts.Logger.Warn("lease elector: lease taken", "lease", e.name, "holder", e.Leader())
			return
		default:
			lastErr = err
		}
	}
}

// tryAcquireOrRenew writes the Lease as this process's, renewed at now,
// unless another holds it and it has not expired (errHeld).
func (e *LeaseElector) tryAcquireOrRenew(ctx context.Context, now time.Time) error {
	// A leader writes over the Lease it last wrote; if anyone wrote
	// since, that fails on the resourceVersion and the Lease is read.
	if e.IsLeader() && e.lease != nil && holder(e.lease) == e.identity {
		if err := e.write(ctx, e.lease.DeepCopy(), now); err == nil {
			return nil
		}
	}
	cur, err := e.k.getLease(ctx, e.namespace, e.name)
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.namespace}}
		e.spec(l, now)
		created, err := e.k.createLease(ctx, e.namespace, l)
		if err != nil {
			return fmt.Errorf("create lease %s: %w", e.name, err)
		}
		e.observe(created)
		return nil
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", e.name, err)
	}
	if e.lease == nil || cur.ResourceVersion != e.lease.ResourceVersion {
		e.observe(cur)
	}
	if h := holder(cur); h != "" && h != e.identity && time.Now().Before(e.observed.Add(e.opts.LeaseDuration)) {
		return errHeld
	}
	return e.write(ctx, cur.DeepCopy(), now)
}

// write makes l, as read, this process's renewed at now.
func (e *LeaseElector) write(ctx context.Context, l *coordinationv1.Lease, now time.Time) error {
	e.spec(l, now)
	updated, err := e.k.updateLease(ctx, e.namespace, l)
	if err != nil {
		return fmt.Errorf("update lease %s: %w", e.name, err)
	}
	e.observe(updated)
	return nil
}

// spec sets l's holder to this process, renewed at now; a Lease taken
// from another holder (or none) is acquired now, one transition more.
func (e *LeaseElector) spec(l *coordinationv1.Lease, now time.Time) {
	t := metav1.NewMicroTime(now)
	taken := holder(l) != e.identity
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	if taken && l.ResourceVersion != "" {
		transitions++
	}
	if taken || l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &t
	}
	l.Spec.HolderIdentity = ptr(e.identity)
	l.Spec.LeaseDurationSeconds = ptr(int32(max(1, e.opts.LeaseDuration/time.Second)))
	l.Spec.RenewTime = &t
	l.Spec.LeaseTransitions = &transitions
}

// observe records l as the Lease now: it changed at this moment.
func (e *LeaseElector) observe(l *coordinationv1.Lease) {
	e.lease, e.observed = l, time.Now()
	e.setLeader(holder(l))
}

// release, when this process holds the Lease, gives it up with a
// renewal that has already expired, as client-go's ReleaseOnCancel does:
// a follower takes it at its next try, not a LeaseDuration later.
func (e *LeaseElector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.RenewDeadline)
	defer cancel()
	for try := 0; e.lease != nil && holder(e.lease) == e.identity && try < 2; try++ {
		l := e.lease.DeepCopy()
		t := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr(""), ptr(int32(1))
		l.Spec.RenewTime, l.Spec.AcquireTime = &t, &t
		updated, err := e.k.updateLease(ctx, e.namespace, l)
		if err == nil {
			e.observe(updated)
			return
		}
		if !apierrors.IsConflict(err) {
			e.opts.Logger.Warn("lease elector: release", "lease", e.name, "err", err)
			return
		}
		// Written since: release it only if this process still holds it.
		cur, err := e.k.getLease(ctx, e.namespace, e.name)
		if err != nil {
			e.opts.Logger.Warn("lease elector: release", "lease", e.name, "err", err)
			return
		}
		e.observe(cur)
	}
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
