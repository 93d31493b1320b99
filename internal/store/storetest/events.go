package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
)

func testTenantEvents(t *testing.T, h *harness) {
	s := h.s
	ev := func(tenant, sb, typ string, d time.Duration) eventrec.Event {
		return eventrec.Event{TenantID: tenant, SandboxID: sb, Type: typ, Time: t0.Add(d), Data: []byte(`{"n":1}`)}
	}
	batch := []eventrec.Event{
		ev("ten_a", "sb_1", "sandbox.created", 0),
		ev("ten_b", "sb_2", "sandbox.created", time.Second),
		ev("ten_a", "sb_1", "exec.exited", 2*time.Second),
		ev("ten_a", "sb_1", "sandbox.destroyed", 3*time.Second),
	}
	must(t, s.AppendEvents(ctx, batch))
	must(t, s.AppendEvents(ctx, nil))
	for i := 1; i < len(batch); i++ {
		if batch[i].ID <= batch[i-1].ID {
			t.Errorf("ids not ascending: %d after %d", batch[i].ID, batch[i-1].ID)
		}
	}
	got, err := s.TenantEvents(ctx, "ten_a", 0, nil, 10)
	must(t, err)
	want := []eventrec.Event{batch[0], batch[2], batch[3]}
	opt := cmpopts.EquateApproxTime(0)
	if d := cmp.Diff(want, got, opt); d != "" {
		t.Errorf("tenant a (-want +got):\n%s", d)
	}
	got, _ = s.TenantEvents(ctx, "ten_a", batch[0].ID, []string{"sandbox.destroyed", "sandbox.created"}, 10)
	if d := cmp.Diff([]eventrec.Event{batch[3]}, got, opt); d != "" {
		t.Errorf("after the first, two types (-want +got):\n%s", d)
	}
	got, _ = s.TenantEvents(ctx, "ten_a", 0, nil, 1)
	if len(got) != 1 || got[0].ID != batch[0].ID {
		t.Errorf("limit 1: %+v", got)
	}
	if got, err := s.TenantEvents(ctx, "ten_none", 0, nil, 10); err != nil || len(got) != 0 {
		t.Errorf("a tenant without events: %+v, %v", got, err)
	}

	// Pruned IDs are not handed out again, even after a restart: a client
	// resuming after the last must never miss a new event numbered alike.
	if n, err := s.PruneEvents(ctx, t0.Add(time.Hour), 0); err != nil || n != 4 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	s = h.restart(t)
	next := []eventrec.Event{ev("ten_a", "sb_3", "sandbox.created", time.Hour)}
	must(t, s.AppendEvents(ctx, next))
	if next[0].ID <= batch[3].ID {
		t.Errorf("id after prune and reopen: %d, want above %d", next[0].ID, batch[3].ID)
	}
	if got, _ := s.TenantEvents(ctx, "ten_a", batch[3].ID, nil, 10); len(got) != 1 || got[0].ID != next[0].ID {
		t.Errorf("resuming after the last pruned: %+v", got)
	}
}

func testPruneEventsCount(t *testing.T, h *harness) {
	s := h.s
	var batch []eventrec.Event
	for i := range 10 {
		batch = append(batch, eventrec.Event{TenantID: "ten_a", SandboxID: "sb", Type: "x", Time: t0.Add(time.Duration(i) * time.Second), Data: []byte(`{}`)})
	}
	must(t, s.AppendEvents(ctx, batch))
	// Time bound: the first two are older than t0+2s.
	if n, err := s.PruneEvents(ctx, t0.Add(2*time.Second), 0); err != nil || n != 2 {
		t.Fatalf("prune by time: %d, %v", n, err)
	}
	// Count bound: keep the newest 3.
	if n, err := s.PruneEvents(ctx, t0, 3); err != nil || n != 5 {
		t.Fatalf("prune by count: %d, %v", n, err)
	}
	got, _ := s.TenantEvents(ctx, "ten_a", 0, nil, 100)
	var ids []int64
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if d := cmp.Diff([]int64{batch[7].ID, batch[8].ID, batch[9].ID}, ids); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
}

func testWebhookDeliveries(t *testing.T, h *harness) {
	s := h.s
	wa := eventrec.Webhook{ID: "wh_a", TenantID: "ten_a", URL: "https://a.example/hook", Events: []string{"*"}, Sealed: []byte{1, 2}, CreatedAt: t0}
	wb := eventrec.Webhook{ID: "wh_b", TenantID: "ten_b", URL: "https://b.example/hook", Events: []string{"sandbox.created"}, Sealed: []byte{3}, CreatedAt: t0.Add(time.Second)}
	for _, w := range []eventrec.Webhook{wa, wb} {
		must(t, s.CreateWebhook(ctx, w))
	}
	if err := s.CreateWebhook(ctx, wa); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second create: %v, want ErrConflict", err)
	}
	if _, err := s.GetWebhook(ctx, "ten_b", "wh_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's webhook: %v, want ErrNotFound", err)
	}
	if got, err := s.GetWebhook(ctx, "ten_a", "wh_a"); err != nil || !cmp.Equal(wa, got) {
		t.Errorf("GetWebhook: %+v, %v", got, err)
	}
	all, err := s.ListWebhooks(ctx, "")
	must(t, err)
	opt := cmpopts.EquateApproxTime(0)
	if d := cmp.Diff([]eventrec.Webhook{wa, wb}, all, opt); d != "" {
		t.Errorf("all webhooks (-want +got):\n%s", d)
	}

	// A delivery naming another tenant's webhook, or a missing one, is
	// not created (and does not fail the batch).
	evs := []eventrec.Event{{TenantID: "ten_a", SandboxID: "sb_1", Type: "sandbox.created", Time: t0, Data: []byte(`{"a":1}`),
		Deliveries: []eventrec.Delivery{{ID: "dl_1", WebhookID: "wh_a"}, {ID: "dl_x", WebhookID: "wh_b"}, {ID: "dl_y", WebhookID: "wh_gone"}}}}
	must(t, s.AppendEvents(ctx, evs))
	eid := evs[0].ID
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
	must(t, err)
	wantDue := []eventrec.Delivery{{ID: "dl_1", WebhookID: "wh_a", TenantID: "ten_a", EventID: eid, EventType: "sandbox.created",
		State: eventrec.DeliveryPending, NextAt: t0, CreatedAt: t0, Webhook: wa, Event: eventrec.Event{ID: eid, TenantID: "ten_a",
			SandboxID: "sb_1", Type: "sandbox.created", Time: t0, Data: []byte(`{"a":1}`)}}}
	wantDue[0].Webhook.Events = nil // not read back with a delivery
	if d := cmp.Diff(wantDue, due, opt); d != "" {
		t.Errorf("due (-want +got):\n%s", d)
	}

	// Two failed attempts, then success.
	d := due[0]
	d.Webhook, d.Event = eventrec.Webhook{}, eventrec.Event{}
	for i, st := range []int{500, 0, 204} {
		d.Attempts = i + 1
		d.LastStatus, d.LastError = st, ""
		d.NextAt = t0.Add(time.Duration(i+1) * time.Second)
		if st == 0 {
			d.LastError = "connection refused"
		}
		if st == 204 {
			d.State, d.NextAt, d.EndedAt = eventrec.DeliveryDelivered, time.Time{}, t0.Add(3*time.Second)
		}
		a := eventrec.DeliveryAttempt{N: i + 1, Time: t0.Add(time.Duration(i) * time.Second), Status: st, Error: d.LastError, DurationMS: 1.5}
		must(t, s.RecordAttempt(ctx, d, a))
	}
	if err := s.RecordAttempt(ctx, d, eventrec.DeliveryAttempt{N: 3, Time: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("an attempt's number taken twice: %v, want ErrConflict", err)
	}
	if next, _ := s.NextDelivery(ctx, time.Time{}); !next.IsZero() {
		t.Errorf("next delivery after success: %v", next)
	}
	if err := s.RecordAttempt(ctx, eventrec.Delivery{ID: "dl_nope"}, eventrec.DeliveryAttempt{N: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("attempt of a missing delivery: %v", err)
	}
	list, err := s.ListDeliveries(ctx, "ten_a", "wh_a", 0, 10)
	must(t, err)
	d.History = []eventrec.DeliveryAttempt{
		{N: 1, Time: t0, Status: 500, DurationMS: 1.5},
		{N: 2, Time: t0.Add(time.Second), Error: "connection refused", DurationMS: 1.5},
		{N: 3, Time: t0.Add(2 * time.Second), Status: 204, DurationMS: 1.5},
	}
	if diff := cmp.Diff([]eventrec.Delivery{d}, list, opt); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if list, _ := s.ListDeliveries(ctx, "ten_b", "wh_a", 0, 10); len(list) != 0 {
		t.Errorf("another tenant sees %d deliveries", len(list))
	}
	if list, _ := s.ListDeliveries(ctx, "ten_a", "wh_a", eid, 10); len(list) != 0 {
		t.Errorf("before the first event: %d deliveries", len(list))
	}

	// A pending delivery keeps its event through a prune; a finished one
	// does not, and is itself pruned once old.
	evs = []eventrec.Event{{TenantID: "ten_a", SandboxID: "sb_1", Type: "exec.exited", Time: t0, Data: []byte(`{}`),
		Deliveries: []eventrec.Delivery{{ID: "dl_2", WebhookID: "wh_a"}}}}
	must(t, s.AppendEvents(ctx, evs))
	if n, err := s.PruneEvents(ctx, t0.Add(time.Hour), 0); err != nil || n != 1 {
		t.Errorf("prune: %d, %v; want 1 (the second event is pending)", n, err)
	}
	if due, _ := s.DueDeliveries(ctx, t0, 10); len(due) != 1 || due[0].ID != "dl_2" {
		t.Errorf("due after prune: %+v", due)
	}
	if list, _ := s.ListDeliveries(ctx, "ten_a", "wh_a", 0, 10); len(list) != 1 || list[0].ID != "dl_2" {
		t.Errorf("deliveries after prune: %+v", list)
	}

	// Deleting a webhook takes its deliveries along; the other tenant
	// cannot delete it.
	if err := s.DeleteWebhook(ctx, "ten_b", "wh_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete by another tenant: %v", err)
	}
	must(t, s.DeleteWebhook(ctx, "ten_a", "wh_a"))
	if next, _ := s.NextDelivery(ctx, time.Time{}); !next.IsZero() {
		t.Errorf("a deleted webhook's delivery is still pending at %v", next)
	}
	if list, _ := s.ListWebhooks(ctx, "ten_a"); len(list) != 0 {
		t.Errorf("webhooks after delete: %+v", list)
	}
	if list, _ := s.ListWebhooks(ctx, "ten_b"); len(list) != 1 {
		t.Errorf("the other tenant's webhooks after delete: %+v", list)
	}
}

// testListDeliveriesPages pages a webhook's deliveries newest first with
// "before", as the API does, and DueDeliveries earliest first with a limit.
func testListDeliveriesPages(t *testing.T, h *harness) {
	s := h.s
	must(t, s.CreateWebhook(ctx, eventrec.Webhook{ID: "wh", TenantID: "ten", URL: "https://x", Events: []string{"*"}, Sealed: []byte{1}, CreatedAt: t0}))
	var evs []eventrec.Event
	for i := range 7 {
		evs = append(evs, eventrec.Event{TenantID: "ten", SandboxID: "sb", Type: "x", Time: t0.Add(time.Duration(6-i) * time.Second),
			Data: []byte(`{}`), Deliveries: []eventrec.Delivery{{ID: fmt.Sprintf("dl_%d", i), WebhookID: "wh"}}})
	}
	must(t, s.AppendEvents(ctx, evs))
	var got []string
	before := int64(0)
	for range 10 {
		page, err := s.ListDeliveries(ctx, "ten", "wh", before, 3)
		must(t, err)
		if len(page) == 0 {
			break
		}
		for _, d := range page {
			got = append(got, d.ID)
		}
		before = page[len(page)-1].EventID
	}
	if d := cmp.Diff([]string{"dl_6", "dl_5", "dl_4", "dl_3", "dl_2", "dl_1", "dl_0"}, got); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
	due, err := s.DueDeliveries(ctx, t0.Add(time.Hour), 2)
	must(t, err)
	if len(due) != 2 || due[0].ID != "dl_6" || due[1].ID != "dl_5" {
		t.Errorf("the two earliest due: %+v", due)
	}
}
