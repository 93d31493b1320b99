package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// Kube is the little of the Kubernetes API this package uses: Leases
// (coordination.k8s.io/v1) and Secrets (v1), in a namespace. It is not
// client-go's typed clientset on purpose: that one registers every API
// group at init, which every airlock command (run, exec, version) would
// pay for, and doubles the binary.
type Kube struct {
	rc rest.Interface
}

// statusCodecs decode only metav1.Status, so that a failed request's
// error is the API server's (apierrors.IsNotFound, IsAlreadyExists,
// IsConflict); the objects themselves are plain JSON.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// NewKube makes a client on conf, which it does not change.
func NewKube(conf *rest.Config) (*Kube, error) {
	c := rest.CopyConfig(conf)
	c.GroupVersion = &coordinationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = statusCodecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Kube{rc: rc}, nil
}

// secret is the part of a v1 Secret this package reads and writes. The
// API server keeps the fields it does not know of as they are: Secrets
// are only created and read here, never updated.
type secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Type              string            `json:"type,omitempty"`
	Data              map[string][]byte `json:"data,omitempty"`
}

func leasePath(ns string, name ...string) []string {
	return append([]string{"/apis/coordination.k8s.io/v1/namespaces", ns, "leases"}, name...)
}

func secretPath(ns string, name ...string) []string {
	return append([]string{"/api/v1/namespaces", ns, "secrets"}, name...)
}

// do sends r and decodes the answer into out (when not nil). An error
// is the API server's Status, as apierrors reads it.
func do(ctx context.Context, r *rest.Request, out any) error {
	res := r.Do(ctx)
	if err := res.Error(); err != nil {
		return err
	}
	body, _ := res.Raw()
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %T: %w", out, err)
	}
	return nil
}

// withBody sets r's body to v in JSON.
func withBody(r *rest.Request, v any) (*rest.Request, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return r.SetHeader("Content-Type", runtime.ContentTypeJSON).Body(b), nil
}

func (k *Kube) getLease(ctx context.Context, ns, name string) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	return &l, do(ctx, k.rc.Get().AbsPath(leasePath(ns, name)...), &l)
}

func (k *Kube) listLeases(ctx context.Context, ns, selector string) ([]coordinationv1.Lease, error) {
	var list coordinationv1.LeaseList
	err := do(ctx, k.rc.Get().AbsPath(leasePath(ns)...).Param("labelSelector", selector), &list)
	return list.Items, err
}

func (k *Kube) createLease(ctx context.Context, ns string, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l.APIVersion, l.Kind = coordinationv1.SchemeGroupVersion.String(), "Lease"
	r, err := withBody(k.rc.Post().AbsPath(leasePath(ns)...), l)
	if err != nil {
		return nil, err
	}
	var out coordinationv1.Lease
	return &out, do(ctx, r, &out)
}

// updateLease writes l whole; the API server refuses it (409 Conflict)
// unless l's resourceVersion is the Lease's now.
func (k *Kube) updateLease(ctx context.Context, ns string, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l.APIVersion, l.Kind = coordinationv1.SchemeGroupVersion.String(), "Lease"
	r, err := withBody(k.rc.Put().AbsPath(leasePath(ns, l.Name)...), l)
	if err != nil {
		return nil, err
	}
	var out coordinationv1.Lease
	return &out, do(ctx, r, &out)
}

// mergePatchLease applies a JSON merge patch (RFC 7386) to the Lease.
func (k *Kube) mergePatchLease(ctx context.Context, ns, name string, patch []byte) error {
	return do(ctx, k.rc.Patch(types.MergePatchType).AbsPath(leasePath(ns, name)...).Body(patch), nil)
}

func (k *Kube) deleteLease(ctx context.Context, ns, name string) error {
	return do(ctx, k.rc.Delete().AbsPath(leasePath(ns, name)...), nil)
}

func (k *Kube) getSecret(ctx context.Context, ns, name string) (*secret, error) {
	var s secret
	return &s, do(ctx, k.rc.Get().AbsPath(secretPath(ns, name)...), &s)
}

func (k *Kube) createSecret(ctx context.Context, ns string, s *secret) (*secret, error) {
	s.APIVersion, s.Kind = "v1", "Secret"
	r, err := withBody(k.rc.Post().AbsPath(secretPath(ns)...), s)
	if err != nil {
		return nil, err
	}
	var out secret
	return &out, do(ctx, r, &out)
}
