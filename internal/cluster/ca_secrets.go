package cluster

import (
	"bytes"
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/nodes"
)

// The Secrets of an in-cluster deployment's mutual TLS. The control
// plane reads both; a node may read only NodeCASecret (its RBAC names it
// alone), which holds the node CA's key but of the control-plane CA only
// the certificate: a compromised node can pose as a node, never as the
// control plane.
const (
	ControlPlaneCASecret = "airlock-cp-ca"
	NodeCASecret         = "airlock-node-ca"

	keyCACert   = "ca.crt"
	keyCAKey    = "ca.key"
	keyCPCACert = "cp-ca.crt"
)

// EnsureCAs returns the control plane's CAs, making each Secret that is
// not there yet. Replicas that start together race to create them; the
// first create wins and the others read what it wrote.
func EnsureCAs(ctx context.Context, k *Kube, namespace string) (*nodes.ClusterCAs, error) {
	now := time.Now()
	cp, err := ensureSecret(ctx, k, namespace, ControlPlaneCASecret, func() (map[string][]byte, error) {
		cert, key, err := nodes.NewCAPEM(nodes.ControlPlaneCAName, now)
		return map[string][]byte{keyCACert: cert, keyCAKey: key}, err
	})
	if err != nil {
		return nil, err
	}
	if err := hasKeys(cp, ControlPlaneCASecret, keyCACert, keyCAKey); err != nil {
		return nil, err
	}
	node, err := ensureSecret(ctx, k, namespace, NodeCASecret, func() (map[string][]byte, error) {
		cert, key, err := nodes.NewCAPEM(nodes.ClusterNodeCAName, now)
		return map[string][]byte{keyCACert: cert, keyCAKey: key, keyCPCACert: cp.Data[keyCACert]}, err
	})
	if err != nil {
		return nil, err
	}
	if err := hasKeys(node, NodeCASecret, keyCACert, keyCAKey, keyCPCACert); err != nil {
		return nil, err
	}
	// Both were made by the same winner unless someone replaced one: the
	// nodes would then refuse this control plane.
	if !bytes.Equal(node.Data[keyCPCACert], cp.Data[keyCACert]) {
		return nil, fmt.Errorf("secret %s/%s holds a %s that is not %s's CA: delete both Secrets (and restart the nodes) to make a new pair",
			namespace, NodeCASecret, keyCPCACert, ControlPlaneCASecret)
	}
	return &nodes.ClusterCAs{ControlPlaneCert: cp.Data[keyCACert], ControlPlaneKey: cp.Data[keyCAKey], NodeCert: node.Data[keyCACert]}, nil
}

func ensureSecret(ctx context.Context, k *Kube, namespace, name string, gen func() (map[string][]byte, error)) (*secret, error) {
	s, err := k.getSecret(ctx, namespace, name)
	if err == nil {
		return s, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	data, err := gen()
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	s = &secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{partOfLabel: partOf, componentLabel: "airlock-ca"}},
		Type:       "Opaque",
		Data:       data,
	}
	created, err := k.createSecret(ctx, namespace, s)
	if apierrors.IsAlreadyExists(err) {
		// Another replica's create won: take its CA, never ours.
		created, err = k.getSecret(ctx, namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	return created, nil
}

func hasKeys(s *secret, name string, keys ...string) error {
	for _, k := range keys {
		if len(s.Data[k]) == 0 {
			return fmt.Errorf("secret %s/%s has no %s", s.Namespace, name, k)
		}
	}
	return nil
}

// NodeCAs reads what a node needs from NodeCASecret; WaitNodeCAs waits
// for it.
func NodeCAs(ctx context.Context, k *Kube, namespace string) (*nodes.NodeCAs, error) {
	s, err := k.getSecret(ctx, namespace, NodeCASecret)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, NodeCASecret, err)
	}
	if err := hasKeys(s, NodeCASecret, keyCACert, keyCAKey, keyCPCACert); err != nil {
		return nil, err
	}
	return &nodes.NodeCAs{NodeCert: s.Data[keyCACert], NodeKey: s.Data[keyCAKey], ControlPlaneCert: s.Data[keyCPCACert]}, nil
}

// WaitNodeCAs reads NodeCASecret, trying again every every while it is
// not there (the control plane makes it at its first start) or cannot be
// read, until ctx ends; waiting says why, on each failed try.
func WaitNodeCAs(ctx context.Context, k *Kube, namespace string, every time.Duration, waiting func(error)) (*nodes.NodeCAs, error) {
	for {
		cas, err := NodeCAs(ctx, k, namespace)
		if err == nil {
			return cas, nil
		}
		if waiting != nil {
			waiting(err)
		}
		if !Sleep(ctx, every) {
			return nil, fmt.Errorf("waiting for secret %s/%s: %w (last: %v)", namespace, NodeCASecret, ctx.Err(), err)
		}
	}
}
