package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaseWrite is what a holder writes to its Lease: labels, annotations
// (a nil value takes one away) and, when renew, the holder, the
// duration and the renewal time, now.
type leaseWrite struct {
	name        string
	labels      map[string]string
	annotations map[string]*string
	renew       bool
	holder      string
	duration    time.Duration
}

// putLease writes w with a JSON merge patch, so what others write to the
// Lease (a node's draining mark) stays as it is, and creates the Lease
// when there is none (and only then: create is not tried for a write
// that does not renew).
func putLease(ctx context.Context, k *Kube, namespace string, w leaseWrite) error {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(max(1, (w.duration+time.Second-1)/time.Second))
	meta := map[string]any{}
	if len(w.labels) > 0 {
		meta["labels"] = w.labels
	}
	if len(w.annotations) > 0 {
		meta["annotations"] = w.annotations
	}
	patch := map[string]any{"metadata": meta}
	if w.renew {
		patch["spec"] = map[string]any{"holderIdentity": w.holder, "leaseDurationSeconds": secs, "renewTime": now}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		err = k.mergePatchLease(ctx, namespace, w.name, body)
		if !apierrors.IsNotFound(err) || !w.renew || try > 0 {
			break
		}
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Labels: w.labels, Annotations: map[string]string{}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &w.holder, LeaseDurationSeconds: &secs, RenewTime: &now, AcquireTime: &now},
		}
		for k, v := range w.annotations {
			if v != nil {
				l.Annotations[k] = *v
			}
		}
		if _, err = k.createLease(ctx, namespace, l); !apierrors.IsAlreadyExists(err) {
			break
		}
		// Created meanwhile (another process of the same holder): patch.
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", w.name, err)
	}
	return nil
}

// leaseTimes reads when a Lease was renewed and for how long.
func leaseTimes(l *coordinationv1.Lease) (renewed time.Time, duration time.Duration) {
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return renewed, duration
}

func ptr[T any](v T) *T { return &v }
