// Package cluster is what lets Airlock run as more than one process: who
// leads (a Kubernetes Lease or a PostgreSQL advisory lock), which control
// plane replicas are up and where they are reached, the Leases that
// in-cluster nodes register and renew, and the CAs kept in Kubernetes
// Secrets for the mutual TLS between them.
//
// It must never decide anything on a clock it has not been given a lease
// for: a leader is one only while its Lease or its database session
// holds, a member or node only while its renewal is fresh. It never reads
// or writes the store's own tables.
package cluster

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Connect makes a Kubernetes client from the kubeconfig at path, or from
// the pod's service account when path is "" (in the cluster).
func Connect(kubeconfig string) (*Kube, *rest.Config, error) {
	var conf *rest.Config
	var err error
	if kubeconfig == "" {
		conf, err = rest.InClusterConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("kubernetes in-cluster config (not in a pod? give --kubeconfig): %w", err)
		}
	} else if conf, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	conf.UserAgent = "airlock"
	// client-go's default (5 per second, bursts of 10) is for tools; a
	// control plane renews Leases, lists nodes and elects on one client.
	conf.QPS, conf.Burst = 50, 100
	k, err := NewKube(conf)
	if err != nil {
		return nil, nil, err
	}
	return k, conf, nil
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the namespace when nothing names one.
const DefaultNamespace = "airlock"

// Namespace is the namespace to work in: flag, else $POD_NAMESPACE (the
// downward API), else the pod's service account's, else DefaultNamespace.
func Namespace(flag string) string {
	if flag != "" {
		return flag
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return DefaultNamespace
}
