package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
)

// NodeLease is an in-cluster node's Lease, airlock-node-<name>.
type NodeLease = nodes.Lease

// NodeLeases are the Leases in-cluster nodes register and renew: holder
// the node's name, annotations its address, version, node API protocol,
// capacity and use (JSON), and two marks that stop new sandboxes:
// airlock.dev/drained "true" while an operator has drained the node
// through the API (the control plane writes it; it lasts until undrained,
// across the node's restarts), and airlock.dev/draining "true" while the
// node's pod is stopping (`airlock node drain`, its preStop, writes it;
// the node's next process clears it when it registers). The node writes
// neither on a renewal. They implement nodes.Discovery.
type NodeLeases struct {
	k         *Kube
	namespace string
	// RenewEvery is how often Run renews (default 5 s); Duration how long
	// a renewal lasts, whole seconds (default 15 s).
	RenewEvery time.Duration
	Duration   time.Duration
	Logger     *slog.Logger
}

var _ nodes.Discovery = (*NodeLeases)(nil)

// NewNodeLeases works on the node Leases in namespace.
func NewNodeLeases(k *Kube, namespace string) *NodeLeases {
	return &NodeLeases{k: k, namespace: namespace, RenewEvery: DefaultRenewEvery, Duration: DefaultLeaseFor, Logger: slog.Default()}
}

func nodeLeaseName(name string) string { return nodeLeasePrefix + name }

// Register writes the node's Lease, renewed now, with its draining mark
// as n says: a node process that starts takes sandboxes again after its
// pod's preStop drain. An operator's drain (SetDrained) stays.
func (l *NodeLeases) Register(ctx context.Context, n NodeLease) error {
	return l.write(ctx, n, true)
}

// Renew renews the node's Lease with its figures now, leaving its
// marks as they are.
func (l *NodeLeases) Renew(ctx context.Context, n NodeLease) error {
	return l.write(ctx, n, false)
}

func (l *NodeLeases) write(ctx context.Context, n NodeLease, draining bool) error {
	if err := nodes.CheckClusterName(n.Name); err != nil {
		return err
	}
	capacity, err := json.Marshal(n.Capacity)
	if err != nil {
		return err
	}
	use, err := json.Marshal(n.Use)
	if err != nil {
		return err
	}
	ann := map[string]*string{
		annotationAddr:     ptr(n.Addr),
		annotationVersion:  ptr(n.Version),
		annotationProtocol: ptr(strconv.Itoa(n.Protocol)),
		annotationCapacity: ptr(string(capacity)),
		annotationUse:      ptr(string(use)),
	}
	if draining {
		ann[annotationDraining] = drainingValue(n.Draining)
	}
	d := n.Duration
	if d <= 0 {
		d = l.Duration
	}
	return putLease(ctx, l.k, l.namespace, leaseWrite{
		name:        nodeLeaseName(n.Name),
		labels:      map[string]string{componentLabel: nodeComponent, partOfLabel: partOf},
		annotations: ann,
		renew:       true, holder: n.Name, duration: d,
	})
}

func drainingValue(draining bool) *string {
	if draining {
		return ptr("true")
	}
	return nil
}

// Run registers the node (status says what it is now) and renews its
// Lease every RenewEvery until ctx ends. It never deletes the Lease: a
// node process that stops (an upgrade) leaves its sandboxes running for
// the next one, and the Lease expires unless that one renews it.
func (l *NodeLeases) Run(ctx context.Context, status func(context.Context) (NodeLease, error)) {
	first := true
	renewLoop(ctx, l.RenewEvery, l.Logger, "node lease", func(ctx context.Context) error {
		n, err := status(ctx)
		if err != nil {
			return fmt.Errorf("node status: %w", err)
		}
		if first {
			err = l.Register(ctx, n)
		} else {
			err = l.Renew(ctx, n)
		}
		if err == nil {
			first = false
		}
		return err
	})
}

// SetDraining marks the node's pod stopping (no new sandboxes until the
// node's next process registers) or takes the mark away.
func (l *NodeLeases) SetDraining(ctx context.Context, name string, draining bool) error {
	return l.mark(ctx, name, annotationDraining, draining)
}

// SetDrained marks the node drained by an operator (no new sandboxes,
// across the node's restarts, until undrained) or takes the mark away.
func (l *NodeLeases) SetDrained(ctx context.Context, name string, drained bool) error {
	return l.mark(ctx, name, annotationDrained, drained)
}

func (l *NodeLeases) mark(ctx context.Context, name, annotation string, on bool) error {
	if err := nodes.CheckClusterName(name); err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{annotation: drainingValue(on)}}})
	err := l.k.mergePatchLease(ctx, l.namespace, nodeLeaseName(name), patch)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: node %s has no Lease in namespace %s", errdefs.ErrNotFound, name, l.namespace)
	}
	if err != nil {
		return fmt.Errorf("drain node %s: %w", name, err)
	}
	return nil
}

// Delete takes the node's Lease away (a node gone for good).
func (l *NodeLeases) Delete(ctx context.Context, name string) error {
	err := l.k.deleteLease(ctx, l.namespace, nodeLeaseName(name))
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: node %s has no Lease in namespace %s", errdefs.ErrNotFound, name, l.namespace)
	}
	if err != nil {
		return fmt.Errorf("delete node lease %s: %w", name, err)
	}
	return nil
}

// Get returns the node's Lease.
func (l *NodeLeases) Get(ctx context.Context, name string) (NodeLease, error) {
	if err := nodes.CheckClusterName(name); err != nil {
		return NodeLease{}, err
	}
	lease, err := l.k.getLease(ctx, l.namespace, nodeLeaseName(name))
	if apierrors.IsNotFound(err) {
		return NodeLease{}, fmt.Errorf("%w: node %s has no Lease in namespace %s", errdefs.ErrNotFound, name, l.namespace)
	}
	if err != nil {
		return NodeLease{}, fmt.Errorf("node lease %s: %w", name, err)
	}
	return parseNodeLease(lease), nil
}

// List returns every node Lease, live or not, by name.
func (l *NodeLeases) List(ctx context.Context) ([]NodeLease, error) {
	leases, err := l.k.listLeases(ctx, l.namespace, componentLabel+"="+nodeComponent)
	if err != nil {
		return nil, fmt.Errorf("list node leases: %w", err)
	}
	out := make([]NodeLease, 0, len(leases))
	for i := range leases {
		if !strings.HasPrefix(leases[i].Name, nodeLeasePrefix) {
			continue
		}
		out = append(out, parseNodeLease(&leases[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseNodeLease reads a node Lease. Figures that do not parse are left
// zero: the Lease is writable by whoever may patch it, and a bad one
// must not hide the node.
func parseNodeLease(lease *coordinationv1.Lease) NodeLease {
	a := lease.Annotations
	n := NodeLease{Name: strings.TrimPrefix(lease.Name, nodeLeasePrefix), Addr: a[annotationAddr], Version: a[annotationVersion],
		Draining: a[annotationDraining] == "true", Drained: a[annotationDrained] == "true", CreatedAt: lease.CreationTimestamp.Time}
	n.RenewedAt, n.Duration = leaseTimes(lease)
	n.Protocol, _ = strconv.Atoi(a[annotationProtocol])
	json.Unmarshal([]byte(a[annotationCapacity]), &n.Capacity)
	json.Unmarshal([]byte(a[annotationUse]), &n.Use)
	return n
}
