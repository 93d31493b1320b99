package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTenantEvents(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	ev := func(tenant, sb, typ string, d time.Duration) TenantEvent {
		return TenantEvent{TenantID: tenant, SandboxID: sb, Type: typ, Time: t0.Add(d), Data: []byte(`{"n":1}`)}
	}
	batch := []TenantEvent{
		ev("ten_a", "sb_1", "sandbox.created", 0),
		ev("ten_b", "sb_2", "sandbox.created", time.Second),
		ev("ten_a", "sb_1", "exec.exited", 2*time.Second),
		ev("ten_a", "sb_1", "sandbox.destroyed", 3*time.Second),
	}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range batch {
		ids = append(ids, e.ID)
	}
	if d := cmp.Diff([]int64{1, 2, 3, 4}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}

	got, err := s.TenantEvents(ctx, "ten_a", 0, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []TenantEvent{batch[0], batch[2], batch[3]}
	opt := cmpopts.EquateApproxTime(0)
	if d := cmp.Diff(want, got, opt); d != "" {
		t.Errorf("tenant a (-want +got):\n%s", d)
	}
	got, _ = s.TenantEvents(ctx, "ten_a", 1, []string{"sandbox.destroyed", "sandbox.created"}, 10)
	if d := cmp.Diff([]TenantEvent{batch[3]}, got, opt); d != "" {
		t.Errorf("after 1, two types (-want +got):\n%s", d)
	}
	got, _ = s.TenantEvents(ctx, "ten_a", 0, nil, 1)
	if len(got) != 1 || got[0].ID != 1 {
		t.Errorf("limit 1: %+v", got)
	}

	// Pruned IDs are not handed out again, even after a restart: a client
	// resuming after id 4 must never miss a new event numbered 4.
	if n, err := s.PruneEvents(ctx, t0.Add(time.Hour), 0); err != nil || n != 4 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	s.Close()
	s2, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	next := []TenantEvent{ev("ten_a", "sb_3", "sandbox.created", time.Hour)}
	if err := s2.AppendEvents(ctx, next); err != nil {
		t.Fatal(err)
	}
	if next[0].ID != 5 {
		t.Errorf("id after prune and reopen: %d, want 5", next[0].ID)
	}
}

func TestPruneEventsCount(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	var batch []TenantEvent
	for i := range 10 {
		batch = append(batch, TenantEvent{TenantID: "ten_a", SandboxID: "sb", Type: "x", Time: t0.Add(time.Duration(i) * time.Second), Data: []byte(`{}`)})
	}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Time bound: the first two are older than t0+2s.
	if n, err := s.PruneEvents(ctx, t0.Add(2*time.Second), 0); err != nil || n != 2 {
		t.Fatalf("prune by time: %d, %v", n, err)
	}
	// Count bound: keep the newest 3 (8, 9, 10).
	if n, err := s.PruneEvents(ctx, t0, 3); err != nil || n != 5 {
		t.Fatalf("prune by count: %d, %v", n, err)
	}
	got, _ := s.TenantEvents(ctx, "ten_a", 0, nil, 100)
	var ids []int64
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if d := cmp.Diff([]int64{8, 9, 10}, ids); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
}

func TestWebhookDeliveries(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	wa := Webhook{ID: "wh_a", TenantID: "ten_a", URL: "https://a.example/hook", Events: []string{"*"}, Sealed: []byte{1, 2}, CreatedAt: t0}
	wb := Webhook{ID: "wh_b", TenantID: "ten_b", URL: "https://b.example/hook", Events: []string{"sandbox.created"}, Sealed: []byte{3}, CreatedAt: t0.Add(time.Second)}
	for _, w := range []Webhook{wa, wb} {
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateWebhook(ctx, wa); !errors.Is(err, ErrConflict) {
		t.Errorf("second create: %v, want ErrConflict", err)
	}
	if _, err := s.GetWebhook(ctx, "ten_b", "wh_a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant's webhook: %v, want ErrNotFound", err)
	}
	all, err := s.ListWebhooks(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	opt := cmpopts.EquateApproxTime(0)
	if d := cmp.Diff([]Webhook{wa, wb}, all, opt); d != "" {
		t.Errorf("all webhooks (-want +got):\n%s", d)
	}

	// A delivery naming another tenant's webhook, or a missing one, is
	// not created (and does not fail the batch).
	evs := []TenantEvent{{TenantID: "ten_a", SandboxID: "sb_1", Type: "sandbox.created", Time: t0, Data: []byte(`{"a":1}`),
		Deliveries: []Delivery{{ID: "dl_1", WebhookID: "wh_a"}, {ID: "dl_x", WebhookID: "wh_b"}, {ID: "dl_y", WebhookID: "wh_gone"}}}}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if next, err := s.NextDelivery(ctx, time.Time{}); err != nil || !next.Equal(t0) {
		t.Errorf("next delivery %v, %v; want %v", next, err, t0)
	}
	if next, _ := s.NextDelivery(ctx, t0); !next.IsZero() {
		t.Errorf("next delivery after %v: %v, want none", t0, next)
	}
	if due, _ := s.DueDeliveries(ctx, t0.Add(-time.Second), 10); len(due) != 0 {
		t.Errorf("due before its time: %+v", due)
	}
	due, err := s.DueDeliveries(ctx, t0, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantDue := []Delivery{{ID: "dl_1", WebhookID: "wh_a", TenantID: "ten_a", EventID: 1, EventType: "sandbox.created",
		State: DeliveryPending, NextAt: t0, CreatedAt: t0, Webhook: wa, Event: TenantEvent{ID: 1, TenantID: "ten_a",
			SandboxID: "sb_1", Type: "sandbox.created", Time: t0, Data: []byte(`{"a":1}`)}}}
	wantDue[0].Webhook.Events = nil // not read back with a delivery
	if d := cmp.Diff(wantDue, due, opt); d != "" {
		t.Errorf("due (-want +got):\n%s", d)
	}

	// Two failed attempts, then success.
	d := due[0]
	d.Webhook, d.Event = Webhook{}, TenantEvent{}
	for i, st := range []int{500, 0, 204} {
		d.Attempts = i + 1
		d.LastStatus, d.LastError = st, ""
		d.NextAt = t0.Add(time.Duration(i+1) * time.Second)
		if st == 0 {
			d.LastError = "connection refused"
		}
		if st == 204 {
			d.State, d.NextAt, d.EndedAt = DeliveryDelivered, time.Time{}, t0.Add(3*time.Second)
		}
		a := DeliveryAttempt{N: i + 1, Time: t0.Add(time.Duration(i) * time.Second), Status: st, Error: d.LastError, DurationMS: 1.5}
		if err := s.RecordAttempt(ctx, d, a); err != nil {
			t.Fatal(err)
		}
	}
	if next, _ := s.NextDelivery(ctx, time.Time{}); !next.IsZero() {
		t.Errorf("next delivery after success: %v", next)
	}
	if err := s.RecordAttempt(ctx, Delivery{ID: "dl_nope"}, DeliveryAttempt{N: 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("attempt of a missing delivery: %v", err)
	}
	list, err := s.ListDeliveries(ctx, "ten_a", "wh_a", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	d.History = []DeliveryAttempt{
		{N: 1, Time: t0, Status: 500, DurationMS: 1.5},
		{N: 2, Time: t0.Add(time.Second), Error: "connection refused", DurationMS: 1.5},
		{N: 3, Time: t0.Add(2 * time.Second), Status: 204, DurationMS: 1.5},
	}
	if diff := cmp.Diff([]Delivery{d}, list, opt); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if list, _ := s.ListDeliveries(ctx, "ten_b", "wh_a", 0, 10); len(list) != 0 {
		t.Errorf("another tenant sees %d deliveries", len(list))
	}
	if list, _ := s.ListDeliveries(ctx, "ten_a", "wh_a", 1, 10); len(list) != 0 {
		t.Errorf("before 1: %d deliveries", len(list))
	}

	// A pending delivery keeps its event through a prune; a finished one
	// does not, and is itself pruned once old.
	evs = []TenantEvent{{TenantID: "ten_a", SandboxID: "sb_1", Type: "exec.exited", Time: t0, Data: []byte(`{}`),
		Deliveries: []Delivery{{ID: "dl_2", WebhookID: "wh_a"}}}}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneEvents(ctx, t0.Add(time.Hour), 0); err != nil || n != 1 {
		t.Errorf("prune: %d, %v; want 1 (event 2 is pending)", n, err)
	}
	if due, _ := s.DueDeliveries(ctx, t0, 10); len(due) != 1 || due[0].ID != "dl_2" {
		t.Errorf("due after prune: %+v", due)
	}
	if list, _ := s.ListDeliveries(ctx, "ten_a", "wh_a", 0, 10); len(list) != 1 || list[0].ID != "dl_2" {
		t.Errorf("deliveries after prune: %+v", list)
	}

	// Deleting a webhook takes its deliveries along; the other tenant
	// cannot delete it.
	if err := s.DeleteWebhook(ctx, "ten_b", "wh_a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete by another tenant: %v", err)
	}
	if err := s.DeleteWebhook(ctx, "ten_a", "wh_a"); err != nil {
		t.Fatal(err)
	}
	if next, _ := s.NextDelivery(ctx, time.Time{}); !next.IsZero() {
		t.Errorf("a deleted webhook's delivery is still pending at %v", next)
	}
	if list, _ := s.ListWebhooks(ctx, "ten_a"); len(list) != 0 {
		t.Errorf("webhooks after delete: %+v", list)
	}
}
