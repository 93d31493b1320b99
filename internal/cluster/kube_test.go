package cluster

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeErrors: the API server's refusals reach the callers as the
// kinds they branch on (a Lease or Secret not there, created twice, or
// written over a version not the latest), not as a generic error.
func TestKubeErrors(t *testing.T) {
	k, ns := kubeNamespace(t)
	ctx := context.Background()
	if _, err := k.getLease(ctx, ns, "none"); !apierrors.IsNotFound(err) {
		t.Errorf("get a missing Lease: %v, want not found", err)
	}
	if err := k.mergePatchLease(ctx, ns, "none", []byte(`{}`)); !apierrors.IsNotFound(err) {
		t.Errorf("patch a missing Lease: %v, want not found", err)
	}
	if err := k.deleteLease(ctx, ns, "none"); !apierrors.IsNotFound(err) {
		t.Errorf("delete a missing Lease: %v, want not found", err)
	}
	if _, err := k.getSecret(ctx, ns, "none"); !apierrors.IsNotFound(err) {
		t.Errorf("get a missing Secret: %v, want not found", err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{"a": "b"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("x")}}
	created, err := k.createLease(ctx, ns, l)
	if err != nil || holder(created) != "x" || created.ResourceVersion == "" {
		t.Fatalf("create a Lease: %+v, %v", created, err)
	}
	if _, err := k.createLease(ctx, ns, l); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create a Lease twice: %v, want already exists", err)
	}
	first := created.DeepCopy()
	created.Spec.HolderIdentity = ptr("y")
	if _, err := k.updateLease(ctx, ns, created); err != nil {
		t.Fatal(err)
	}
	if _, err := k.updateLease(ctx, ns, first); !apierrors.IsConflict(err) {
		t.Errorf("update over a stale version: %v, want conflict", err)
	}
	if list, err := k.listLeases(ctx, ns, "a=b"); err != nil || len(list) != 1 || holder(&list[0]) != "y" {
		t.Errorf("list by label: %+v, %v", list, err)
	}
	if list, err := k.listLeases(ctx, ns, "a=c"); err != nil || len(list) != 0 {
		t.Errorf("list by another label: %+v, %v", list, err)
	}
	s := &secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: "Opaque", Data: map[string][]byte{"k": {0, 1, 2}}}
	if _, err := k.createSecret(ctx, ns, s); err != nil {
		t.Fatal(err)
	}
	if _, err := k.createSecret(ctx, ns, s); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create a Secret twice: %v, want already exists", err)
	}
	if got, err := k.getSecret(ctx, ns, "s"); err != nil || string(got.Data["k"]) != "\x00\x01\x02" || got.Type != "Opaque" {
		t.Errorf("read the Secret back: %+v, %v", got, err)
	}
}
