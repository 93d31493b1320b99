package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/store"
)

// testApprovals: approvals round-trip, are per tenant, list by state
// oldest first, and are decided once.
func testApprovals(t *testing.T, h *harness) {
	s := h.s
	a := approvals.Record{ID: "apr_1", TenantID: "a", SandboxID: "sb_1", Task: "task_1", Kind: "egress",
		Request: `{"host":"denied.test","port":80}`, State: approvals.Pending,
		RequestedAt: t0, Deadline: t0.Add(time.Minute)}
	b := a
	b.ID, b.RequestedAt = "apr_0", t0.Add(time.Second)
	other := a
	other.ID, other.TenantID = "apr_2", "b"
	for _, x := range []approvals.Record{a, b, other} {
		must(t, s.CreateApproval(ctx, x))
	}
	if err := s.CreateApproval(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second apr_1: %v, want ErrConflict", err)
	}
	got, err := s.GetApproval(ctx, "a", "apr_1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.RequestedAt.Equal(t0) || !got.Deadline.Equal(a.Deadline) {
		t.Errorf("times %v, %v; want %v, %v", got.RequestedAt, got.Deadline, t0, a.Deadline)
	}
	got.RequestedAt, got.Deadline = a.RequestedAt, a.Deadline
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := s.GetApproval(ctx, "b", "apr_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's: %v, want ErrNotFound", err)
	}
	ids := func(tenant, state string) []string {
		l, err := s.ListApprovals(ctx, tenant, state)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range l {
			out = append(out, x.ID)
		}
		return out
	}
	if d := cmp.Diff([]string{"apr_1", "apr_0"}, ids("a", approvals.Pending)); d != "" {
		t.Errorf("a's pending, oldest first (-want +got):\n%s", d)
	}
	dec := a
	dec.State, dec.DecidedAt, dec.DecidedBy, dec.Reason, dec.Remember = approvals.Allowed, t0.Add(2*time.Second), "key_1", "ok", "sandbox"
	must(t, s.DecideApproval(ctx, dec))
	if err := s.DecideApproval(ctx, dec); !errors.Is(err, store.ErrConflict) {
		t.Errorf("decided twice: %v, want ErrConflict", err)
	}
	wrong := b
	wrong.TenantID, wrong.State = "b", approvals.Denied
	if err := s.DecideApproval(ctx, wrong); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("decided by another tenant: %v, want ErrNotFound", err)
	}
	if d := cmp.Diff([]string{"apr_0"}, ids("a", approvals.Pending)); d != "" {
		t.Errorf("a's pending after a decision (-want +got):\n%s", d)
	}
	s = h.restart(t)
	got, err = s.GetApproval(ctx, "a", "apr_1")
	if err != nil || got.State != approvals.Allowed || !got.DecidedAt.Equal(dec.DecidedAt) ||
		got.DecidedBy != "key_1" || got.Reason != "ok" || got.Remember != "sandbox" {
		t.Errorf("decided approval after restart: %+v, %v", got, err)
	}
	if d := cmp.Diff([]string{"apr_1", "apr_0"}, ids("a", "")); d != "" {
		t.Errorf("all of a's (-want +got):\n%s", d)
	}

	// Pruning: apr_1 was decided at t0+2s; apr_0 (a's) and apr_2 (b's)
	// are pending until t0+1m.
	if n, err := s.PruneApprovals(ctx, t0.Add(time.Second)); err != nil || n != 0 {
		t.Errorf("prune before any decision or deadline: %d, %v", n, err)
	}
	if n, err := s.PruneApprovals(ctx, t0.Add(3*time.Second)); err != nil || n != 1 {
		t.Errorf("prune past apr_1's decision: %d, %v; want 1", n, err)
	}
	if d := cmp.Diff([]string{"apr_0"}, ids("a", "")); d != "" {
		t.Errorf("a's after pruning the decided one (-want +got):\n%s", d)
	}
	if n, err := s.PruneApprovals(ctx, t0.Add(2*time.Minute)); err != nil || n != 2 {
		t.Errorf("prune past the pending ones' deadline: %d, %v; want 2", n, err)
	}
	if len(ids("a", ""))+len(ids("b", "")) != 0 {
		t.Error("approvals left after pruning them all")
	}
}
