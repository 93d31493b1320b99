package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LeaseMembers keeps each member as a Lease airlock-replica-<id>: the id
// its holder, its URL the annotation airlock.dev/url. A member whose
// Lease was not renewed within its duration is not live; this compares
// the renewal time written by the member's clock with the reader's, so
// the replicas' clocks must agree to well within a renewal (as NTP
// keeps them).
type LeaseMembers struct {
	k         *Kube
	namespace string
	opts      MembersOptions
}

// NewLeaseMembers keeps members as Leases in namespace.
func NewLeaseMembers(k *Kube, namespace string, opts MembersOptions) *LeaseMembers {
	opts.defaults()
	return &LeaseMembers{k: k, namespace: namespace, opts: opts}
}

// Join renews self's Lease every RenewEvery until ctx ends, then deletes
// it.
func (m *LeaseMembers) Join(ctx context.Context, self Member) error {
	if err := checkMemberID(self.ID); err != nil {
		return err
	}
	name := replicaLeasePrefix + self.ID
	defer func() {
		lctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
		defer cancel()
		if err := m.k.deleteLease(lctx, m.namespace, name); err != nil && !apierrors.IsNotFound(err) {
			m.opts.Logger.Warn("leave cluster members", "id", self.ID, "err", err)
		}
	}()
	renewLoop(ctx, m.opts.RenewEvery, m.opts.Logger, "cluster member "+self.ID, func(ctx context.Context) error {
		return m.renew(ctx, self)
	})
	return nil
}

func (m *LeaseMembers) renew(ctx context.Context, self Member) error {
	return putLease(ctx, m.k, m.namespace, leaseWrite{
		name:        replicaLeasePrefix + self.ID,
		labels:      map[string]string{componentLabel: replicaComponent, partOfLabel: partOf},
		annotations: map[string]*string{annotationURL: ptr(self.URL)},
		renew:       true, holder: self.ID, duration: m.opts.Duration,
	})
}

// List returns the members whose Lease is live now, by id.
func (m *LeaseMembers) List(ctx context.Context) ([]Member, error) {
	leases, err := m.k.listLeases(ctx, m.namespace, componentLabel+"="+replicaComponent)
	if err != nil {
		return nil, fmt.Errorf("list replica leases: %w", err)
	}
	now := time.Now()
	var out []Member
	for i := range leases {
		l := &leases[i]
		renewed, d := leaseTimes(l)
		if renewed.IsZero() || !now.Before(renewed.Add(d)) {
			continue
		}
		id := strings.TrimPrefix(l.Name, replicaLeasePrefix)
		if l.Spec.HolderIdentity != nil {
			id = *l.Spec.HolderIdentity
		}
		out = append(out, Member{ID: id, URL: l.Annotations[annotationURL], RenewedAt: renewed})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
