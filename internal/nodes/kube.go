package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// Lease is a node as it registers itself in a cluster (a Kubernetes
// Lease, renewed by the node): where it serves, what it offers and uses,
// and when it last renewed. A Lease not renewed for Duration is lost.
type Lease struct {
	Name     string
	Addr     string
	Version  string
	Protocol int
	Capacity Capacity
	Use      Use
	// Draining: the node's pod is stopping (its preStop drain); its next
	// process clears it. Drained: an operator drained it through the
	// API; it stays, across the node's restarts, until undrained.
	Draining  bool
	Drained   bool
	RenewedAt time.Time
	Duration  time.Duration
	CreatedAt time.Time
}

// Expired says whether the node has not renewed the Lease within its
// duration, at now.
func (l Lease) Expired(now time.Time) bool {
	return l.RenewedAt.IsZero() || !now.Before(l.RenewedAt.Add(l.Duration))
}

// Discovery is where a Service finds its nodes when they register
// themselves (cluster.NodeLeases) instead of joining with a token. Its
// errors for an unknown node wrap errdefs.ErrNotFound.
type Discovery interface {
	List(ctx context.Context) ([]Lease, error)
	// SetDrained is an operator's drain (Service.Drain).
	SetDrained(ctx context.Context, name string, drained bool) error
	Delete(ctx context.Context, name string) error
}

// ErrRegistersItself answers token minting and joining on a control plane
// whose nodes register through Leases.
var ErrRegistersItself = fmt.Errorf("%w: this control plane's nodes run in Kubernetes and register themselves with a Lease (airlock node --kubernetes): there is no join token to mint or spend", errdefs.ErrConflict)

// leaseRegistry is the store's part of a Service (its nodes) read from
// the Leases: status is in each Lease, and nothing else is kept but when
// this control plane saw each Lease renewed.
//
// A node's liveness is judged on the control plane's own clock: a Lease
// counts as renewed when its renewTime is seen to change, at the time it
// is seen, never by comparing the renewTime the node wrote (its clock)
// with this clock. A node whose clock runs an hour ahead would otherwise
// stay live for an hour after it died, and one behind by more than the
// Lease's duration would never be live. Only a Lease seen for the first
// time (this control plane just started) is taken at its word, within
// [now - duration, now]: a node dead since long ago is not brought back
// for a duration, and one whose clock is behind is lost only until its
// next renewal is seen.
type leaseRegistry struct {
	d   Discovery
	now func() time.Time

	mu   sync.Mutex
	seen map[string]observed // by node name
}

// observed is a Lease's renewTime and when this control plane saw it.
type observed struct{ renewed, at time.Time }

func newLeaseRegistry(d Discovery, now func() time.Time) *leaseRegistry {
	return &leaseRegistry{d: d, now: now, seen: map[string]observed{}}
}

func (r *leaseRegistry) ListNodes(ctx context.Context) ([]Node, error) {
	leases, err := r.d.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("node leases: %w", err)
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	listed := make(map[string]bool, len(leases))
	out := make([]Node, 0, len(leases))
	for _, l := range leases {
		listed[l.Name] = true
		out = append(out, leaseNode(l, r.observe(l, now)))
	}
	for name := range r.seen {
		if !listed[name] {
			delete(r.seen, name)
		}
	}
	return out, nil
}

// observe returns when the Lease was last seen renewed, on this clock
// (zero, long lost, for a Lease never renewed). r.mu is held.
func (r *leaseRegistry) observe(l Lease, now time.Time) time.Time {
	if l.RenewedAt.IsZero() {
		delete(r.seen, l.Name)
		return time.Time{}
	}
	o, ok := r.seen[l.Name]
	switch {
	case ok && o.renewed.Equal(l.RenewedAt):
		return o.at
	case ok:
		o = observed{l.RenewedAt, now}
	default:
		// First sight: its word, but no later than now, and no earlier
		// than just expired: lost, but its grace period (and its
		// sandboxes') counted from now, as for a node that cannot be
		// reached when the control plane starts.
		o = observed{l.RenewedAt, l.RenewedAt}
		if o.at.After(now) {
			o.at = now
		}
		if earliest := now.Add(-l.Duration); o.at.Before(earliest) {
			o.at = earliest
		}
	}
	r.seen[l.Name] = o
	return o.at
}

// leaseNode is the node of Lease l, last seen renewed at renewed.
func leaseNode(l Lease, renewed time.Time) Node {
	return Node{Name: l.Name, Addr: l.Addr, Version: l.Version, Capacity: l.Capacity, Use: l.Use,
		LastHeartbeat: &renewed, JoinedAt: l.CreatedAt, Drained: l.Draining || l.Drained, leaseFor: l.Duration, protocol: l.Protocol}
}

func (r *leaseRegistry) GetNode(ctx context.Context, name string) (Node, error) {
	list, err := r.ListNodes(ctx)
	if err != nil {
		return Node{}, err
	}
	for _, n := range list {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("%w: node %s (no Lease)", errdefs.ErrNotFound, name)
}

// UpdateNodeStatus keeps nothing: the node's own Lease carries its status.
func (r *leaseRegistry) UpdateNodeStatus(context.Context, string, Status, time.Time) error {
	return nil
}

func (r *leaseRegistry) SetNodeDrained(ctx context.Context, name string, drained bool) error {
	return r.d.SetDrained(ctx, name, drained)
}

func (r *leaseRegistry) DeleteNode(ctx context.Context, name string) error {
	return r.d.Delete(ctx, name)
}

// registry is the part of Store that keeps the nodes themselves.
type registry interface {
	ListNodes(ctx context.Context) ([]Node, error)
	GetNode(ctx context.Context, name string) (Node, error)
	UpdateNodeStatus(ctx context.Context, name string, s Status, at time.Time) error
	SetNodeDrained(ctx context.Context, name string, drained bool) error
	DeleteNode(ctx context.Context, name string) error
}

// MaxClusterNodeName is the longest name of a node that registers with a
// Lease (airlock-node-<name>, at most 253 characters).
const MaxClusterNodeName = 253 - len("airlock-node-")

// CheckClusterName checks the name of a node that registers with a
// Lease: a Kubernetes node's name, a DNS subdomain (lower-case labels
// joined by dots), which also makes its certificate's name
// <name>.node.airlock.
func CheckClusterName(name string) error {
	if name == "" || len(name) > MaxClusterNodeName {
		return invalid("name", "%q must be a DNS name of 1 to %d characters", name, MaxClusterNodeName)
	}
	for _, label := range strings.Split(name, ".") {
		if err := CheckName(label); err != nil {
			return invalid("name", "%q must be lower-case DNS labels joined by dots", name)
		}
	}
	return nil
}

// newDiscovered sets up a Service whose nodes come from Discovery and
// whose mutual TLS comes from the cluster's CAs.
func newDiscovered(opts Options) (*CA, *controlPlane, error) {
	if opts.ClusterCAs == nil {
		return nil, nil, errors.New("nodes: Options.Discovery needs Options.ClusterCAs")
	}
	return opts.ClusterCAs.controlPlane(opts.Now)
}
