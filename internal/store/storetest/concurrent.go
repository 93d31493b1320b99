package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

const writers = 8

// appendLinked appends one event to sandbox's audit log after its head,
// as the daemon does, retrying when another writer took the number first.
func appendLinked(s store.Store, sandbox string, n int) error {
	for try := 0; try < 1000; try++ {
		seq, hash, err := s.AuditHead(ctx, sandbox)
		if err != nil {
			return err
		}
		var prev *audit.Event
		if seq > 0 {
			prev = &audit.Event{Seq: seq, Hash: hash}
		}
		e := audit.Event{Time: t0.Add(time.Duration(n) * time.Millisecond), Sandbox: sandbox, Tenant: "ten_c", Actor: "key",
			Type: audit.ExecStarted, Data: []byte(fmt.Sprintf(`{"n":%d}`, n))}
		if err := audit.Link(prev, &e); err != nil {
			return err
		}
		err = s.AppendAudit(ctx, []audit.Event{e})
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return errors.New("no turn in 1000 tries")
}

// testConcurrentAppends: writers append tenant events, audit events of one
// sandbox and task events of one task at once. Every event gets an ID of
// its own, each batch's ascend, the audit chain and its head verify, the
// task's numbers run 1..n, and the storage count adds up.
func testConcurrentAppends(t *testing.T, h *harness) {
	s := h.s
	must(t, s.CreateTask(ctx, taskrec.Task{ID: "tsk", TenantID: "ten_c", Harness: "x", State: taskrec.Running, Spec: "", CreatedAt: t0}))
	const rounds = 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*3)
	ids := make([][]int64, writers)
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				batch := []eventrec.Event{
					{TenantID: "ten_c", SandboxID: "sb", Type: "x", Time: t0, Data: []byte(`{}`)},
					{TenantID: "ten_c", SandboxID: "sb", Type: "y", Time: t0, Data: []byte(`{}`)},
				}
				if err := s.AppendEvents(ctx, batch); err != nil {
					errs <- err
					continue
				}
				if batch[1].ID <= batch[0].ID {
					errs <- fmt.Errorf("a batch's ids do not ascend: %d, %d", batch[0].ID, batch[1].ID)
				}
				ids[w] = append(ids[w], batch[0].ID, batch[1].ID)
				if err := appendLinked(s, "sb_c", w*rounds+r); err != nil {
					errs <- err
				}
				if err := s.AppendTaskEvents(ctx, "tsk", []taskrec.Event{{Time: t0, Type: "m", Data: []byte(`{}`)}}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var all []int64
	for _, l := range ids {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("an event id was handed out twice: %v", all)
	}
	stored, err := s.TenantEvents(ctx, "ten_c", 0, nil, 10*writers*rounds)
	must(t, err)
	var got []int64
	for _, e := range stored {
		got = append(got, e.ID)
	}
	if d := cmp.Diff(all, got); d != "" {
		t.Errorf("stored ids (-assigned +stored):\n%s", d)
	}
	verifyLog(t, s, "sb_c", writers*rounds)
	tevs, err := s.TaskEvents(ctx, "tsk", 0, 0)
	must(t, err)
	for i, e := range tevs {
		if e.Seq != int64(i+1) {
			t.Fatalf("task event %d numbered %d", i, e.Seq)
		}
	}
	if len(tevs) != writers*rounds {
		t.Errorf("%d task events, want %d", len(tevs), writers*rounds)
	}
	audits, err := s.AuditEvents(ctx, "sb_c", store.AuditFilter{})
	must(t, err)
	want := store.TaskRowBytes + int64(writers*rounds)*(2*(2+store.EventRowBytes)+2+store.TaskEventRowBytes)
	for _, e := range audits {
		want += store.AuditEventBytes(e)
	}
	if n, err := s.StorageBytes(ctx, "ten_c"); err != nil || n != want {
		t.Errorf("storage after concurrent appends: %d, %v; want %d", n, err, want)
	}
}

// testFollowerMissesNothing: a reader following the event stream with
// "after the last ID I saw", as GET /v1/events and other replicas do,
// while writers append, ends up with every event: none commits with an ID
// below one already seen.
func testFollowerMissesNothing(t *testing.T, h *harness) {
	s := h.s
	const rounds = 25
	done := make(chan struct{})
	var seen []int64
	var ferr error
	follow := func() int { // how many it read; -1 once a read fails
		page, err := s.TenantEvents(ctx, "ten_f", lastOf(seen), nil, 7)
		if err != nil {
			ferr = err
			return -1
		}
		for _, e := range page {
			seen = append(seen, e.ID)
		}
		return len(page)
	}
	var fw sync.WaitGroup
	fw.Go(func() {
		for {
			select {
			case <-done:
				// The writers are done: read until caught up. An event
				// committed below one already seen is never read.
				for follow() > 0 {
				}
				return
			default:
				if follow() < 0 {
					return
				}
			}
		}
	})
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range rounds {
				if err := s.AppendEvents(ctx, []eventrec.Event{{TenantID: "ten_f", SandboxID: "sb", Type: "x", Time: t0, Data: []byte(`{}`)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	fw.Wait()
	must(t, ferr)
	stored, err := s.TenantEvents(ctx, "ten_f", 0, nil, writers*rounds+1)
	must(t, err)
	var all []int64
	for _, e := range stored {
		all = append(all, e.ID)
	}
	if d := cmp.Diff(all, seen); d != "" {
		t.Errorf("the follower missed events (-stored +seen):\n%s", d)
	}
}

func lastOf(ids []int64) int64 {
	if len(ids) == 0 {
		return 0
	}
	return ids[len(ids)-1]
}
