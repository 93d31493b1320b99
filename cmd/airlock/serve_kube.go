package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/cluster"
	"github.com/airlockhq/airlock/internal/nodes"
)

// leaderLease is the Lease the control-plane replicas elect their leader
// with, in Kubernetes.
const leaderLease = "airlock-leader"

// kubeConfig is how serve and node reach Kubernetes: --kubernetes (from
// inside a pod, with its service account) or --kubeconfig PATH, and the
// namespace of the Leases and Secrets.
type kubeConfig struct {
	inCluster  bool
	kubeconfig string
	namespace  string

	once sync.Once
	cs   *cluster.Kube
	err  error
}

// kubeFlags adds --kubernetes, --kubeconfig and --namespace to fs.
func kubeFlags(fs *flag.FlagSet) *kubeConfig {
	k := &kubeConfig{}
	fs.BoolVar(&k.inCluster, "kubernetes", false, "run in Kubernetes, with the pod's service account: Leases for leadership and nodes, the nodes' CAs in Secrets")
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "as --kubernetes, with the cluster and credentials of the kubeconfig at `PATH`")
	fs.StringVar(&k.namespace, "namespace", "", "the Kubernetes namespace of the Leases and Secrets (default: $POD_NAMESPACE, else the pod's, else airlock)")
	return k
}

// enabled says whether Kubernetes was asked for.
func (k *kubeConfig) enabled() bool { return k != nil && (k.inCluster || k.kubeconfig != "") }

// client connects once.
func (k *kubeConfig) client() (*cluster.Kube, error) {
	k.once.Do(func() {
		if k.inCluster && k.kubeconfig != "" {
			k.err = fmt.Errorf("give --kubernetes (in a pod) or --kubeconfig PATH, not both")
			return
		}
		k.cs, _, k.err = cluster.Connect(k.kubeconfig)
	})
	return k.cs, k.err
}

func (k *kubeConfig) ns() string { return cluster.Namespace(k.namespace) }

// nodesOptions sets o up to find the nodes from their Leases, with the
// mutual TLS of the CAs in the namespace's Secrets (made at the first
// start). Without Kubernetes it leaves o as it is.
func (k *kubeConfig) nodesOptions(ctx context.Context, o *nodes.Options) error {
	if !k.enabled() {
		return nil
	}
	cs, err := k.client()
	if err != nil {
		return err
	}
	cas, err := cluster.EnsureCAs(ctx, cs, k.ns())
	if err != nil {
		return fmt.Errorf("node CAs: %w", err)
	}
	o.Discovery = cluster.NewNodeLeases(cs, k.ns())
	o.ClusterCAs = cas
	return nil
}

// elector elects the leader among the replicas with the Lease
// airlock-leader, identity this replica's.
func (k *kubeConfig) elector(identity string) (cluster.Elector, error) {
	cs, err := k.client()
	if err != nil {
		return nil, err
	}
	// A leader killed outright is replaced within LeaseDuration plus a
	// RetryPeriod or two (a follower sees the last renewal up to one
	// RetryPeriod late): 12 s, inside the 15 s a platform team is
	// promised, with the new leader's start. A leader that cannot renew
	// for RenewDeadline steps down first.
	return cluster.NewLeaseElector(cs, k.ns(), leaderLease, identity, cluster.ElectorOptions{LeaseDuration: 10 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: time.Second})
}
