package approvals_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

type recorded struct{ typ, state, actor string }

type harness struct {
	s   *approvals.Service
	mu  sync.Mutex
	log []recorded
	now time.Time
	rem []string // remembered: sandbox/host:port/state
	err error    // Remember's answer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st := teststore.Open(t)
	h := &harness{now: time.Date(2026, 12, 6, 19, 0, 0, 0, time.UTC)}
	h.s = approvals.New(approvals.Options{Store: st,
		Now:    func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now },
		TaskOf: func(context.Context, string, string) string { return "task_1" },
		Record: func(_ context.Context, a approvals.Approval, typ, key string) {
			h.mu.Lock()
			h.log = append(h.log, recorded{typ, a.State, key})
			h.mu.Unlock()
		},
		Remember: func(_ context.Context, a approvals.Approval, key string) error {
			if h.err == nil {
				h.rem = append(h.rem, a.SandboxID+"/"+a.Egress.Host+"/"+a.State)
			}
			return h.err
		},
	})
	return h
}

var (
	ctx   = context.Background()
	key   = approvals.Caller{TenantID: "ten_a", KeyID: "key_1"}
	token = approvals.Caller{TenantID: "ten_a"}
	other = approvals.Caller{TenantID: "ten_b", KeyID: "key_2"}
)

func (h *harness) open(t *testing.T) *approvals.Waiter {
	t.Helper()
	w, err := h.s.Open(ctx, approvals.Request{TenantID: "ten_a", SandboxID: "sb_1", Deadline: h.now.Add(time.Minute),
		Egress: &approvals.Egress{Host: "denied.test", Port: 80, Protocol: "http"}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDecideWakesWaiter: an API key's allow reaches the waiter, and both
// the opening and the decision are recorded with who made them.
func TestDecideWakesWaiter(t *testing.T) {
	h := newHarness(t)
	w := h.open(t)
	got := make(chan approvals.Approval, 1)
	go func() {
		a, err := w.Wait(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	l, err := h.s.List(ctx, key, approvals.Pending)
	if err != nil || len(l) != 1 || l[0].ID != w.Approval().ID || l[0].Task != "task_1" {
		t.Fatalf("pending: %+v, %v", l, err)
	}
	d, err := h.s.Decide(ctx, key, w.Approval().ID, approvals.Decision{Allow: true, Reason: "fine"})
	if err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.State != approvals.Allowed || a.DecidedBy != "key_1" || a.Reason != "fine" || a.Remember != approvals.RememberOnce {
		t.Errorf("waiter got %+v", a)
	}
	if d.State != approvals.Allowed {
		t.Errorf("decision %+v", d)
	}
	want := []recorded{{approvals.EventRequested, approvals.Pending, ""}, {approvals.EventDecided, approvals.Allowed, "key_1"}}
	if diff := cmp.Diff(want, h.log, cmp.AllowUnexported(recorded{})); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if _, err := h.s.Decide(ctx, key, a.ID, approvals.Decision{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("decided twice: %v, want ErrConflict", err)
	}
	if l, _ := h.s.List(ctx, key, approvals.Pending); len(l) != 0 {
		t.Errorf("pending after the decision: %+v", l)
	}
}

// TestWhoMayDecide: a sandbox token is refused (an agent must not approve
// itself) and another tenant finds nothing.
func TestWhoMayDecide(t *testing.T) {
	h := newHarness(t)
	id := h.open(t).Approval().ID
	if _, err := h.s.Decide(ctx, token, id, approvals.Decision{Allow: true}); !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("sandbox token: %v, want ErrForbidden", err)
	}
	if _, err := h.s.Decide(ctx, other, id, approvals.Decision{Allow: true}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another tenant decides: %v, want ErrNotFound", err)
	}
	if _, err := h.s.Get(ctx, other, id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another tenant reads: %v, want ErrNotFound", err)
	}
	if l, err := h.s.List(ctx, other, ""); err != nil || len(l) != 0 {
		t.Errorf("another tenant lists: %+v, %v", l, err)
	}
	if a, err := h.s.Get(ctx, key, id); err != nil || a.State != approvals.Pending {
		t.Errorf("still pending: %+v, %v", a, err)
	}
	if _, err := h.s.Decide(ctx, key, id, approvals.Decision{Remember: "forever"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("remember forever: %v, want ErrInvalid", err)
	}
	if _, err := h.s.List(ctx, key, "maybe"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("state maybe: %v, want ErrInvalid", err)
	}
}

// TestTimeout: a waiter whose ctx passes its deadline times the approval
// out, and the proxy's ask reads that as its own timeout.
func TestTimeout(t *testing.T) {
	h := newHarness(t)
	dctx, cancel := context.WithDeadline(ctx, h.now.Add(-time.Second))
	defer cancel()
	ans, err := h.s.AskEgress(dctx, egress.AskRequest{SandboxID: "sb_1", TenantID: "ten_a", Protocol: "http",
		Host: "denied.test", Port: 80, Deadline: h.now})
	if !errors.Is(err, context.DeadlineExceeded) || ans.Allow {
		t.Errorf("ask: %+v, %v; want the deadline's error", ans, err)
	}
	l, err := h.s.List(ctx, key, approvals.TimedOut)
	if err != nil || len(l) != 1 || l[0].DecidedBy != "" || l[0].Egress.Host != "denied.test" {
		t.Fatalf("timed out: %+v, %v", l, err)
	}
	if _, err := h.s.Decide(ctx, key, l[0].ID, approvals.Decision{Allow: true}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("deciding a timed-out one: %v, want ErrConflict", err)
	}
}

// TestExpiredWithoutWaiter: an approval left pending past its deadline
// (its daemon restarted) reads as timed out.
func TestExpiredWithoutWaiter(t *testing.T) {
	h := newHarness(t)
	id := h.open(t).Approval().ID
	h.mu.Lock()
	h.now = h.now.Add(2 * time.Minute)
	h.mu.Unlock()
	if l, err := h.s.List(ctx, key, approvals.Pending); err != nil || len(l) != 0 {
		t.Errorf("pending past the deadline: %+v, %v", l, err)
	}
	if a, err := h.s.Get(ctx, key, id); err != nil || a.State != approvals.TimedOut {
		t.Errorf("get: %+v, %v; want timed_out", a, err)
	}
}

// TestRemember: remember sandbox goes through the hook before the
// decision is stored; the hook's failure leaves the approval pending.
func TestRemember(t *testing.T) {
	h := newHarness(t)
	id := h.open(t).Approval().ID
	h.err = errors.New("sandbox gone")
	if _, err := h.s.Decide(ctx, key, id, approvals.Decision{Allow: true, Remember: approvals.RememberSandbox}); err == nil {
		t.Fatal("decided although remembering failed")
	}
	if a, _ := h.s.Get(ctx, key, id); a.State != approvals.Pending {
		t.Errorf("after a failed remember: %s, want pending", a.State)
	}
	h.err = nil
	a, err := h.s.Decide(ctx, key, id, approvals.Decision{Allow: true, Remember: approvals.RememberSandbox})
	if err != nil || a.Remember != approvals.RememberSandbox {
		t.Fatalf("%+v, %v", a, err)
	}
	if diff := cmp.Diff([]string{"sb_1/denied.test/allowed"}, h.rem); diff != "" {
		t.Errorf("remembered (-want +got):\n%s", diff)
	}
}

// TestAskEgressDenied: a deny answers the proxy with a refusal naming
// who decided.
func TestAskEgressDenied(t *testing.T) {
	h := newHarness(t)
	type res struct {
		ans egress.AskAnswer
		err error
	}
	got := make(chan res, 1)
	go func() {
		ans, err := h.s.AskEgress(ctx, egress.AskRequest{SandboxID: "sb_1", TenantID: "ten_a", Protocol: "connect",
			Host: "denied.test", Port: 443, Deadline: h.now.Add(time.Minute)})
		got <- res{ans, err}
	}()
	var id string
	for id == "" {
		l, err := h.s.List(ctx, key, approvals.Pending)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			id = l[0].ID
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := h.s.Decide(ctx, key, id, approvals.Decision{Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.ans.Allow || r.ans.Reason != id+" by key_1: not today" {
		t.Errorf("answer %+v, %v", r.ans, r.err)
	}
}

// TestDecidedElsewhere: a decision taken through another replica (another
// Service on the same store) reaches the waiter of the one that opened
// the approval, by the store.
func TestDecidedElsewhere(t *testing.T) {
	st := teststore.Open(t)
	a := approvals.New(approvals.Options{Store: st, PollEvery: 20 * time.Millisecond})
	b := approvals.New(approvals.Options{Store: st, PollEvery: 20 * time.Millisecond})
	w, err := a.Open(ctx, approvals.Request{TenantID: "ten_a", SandboxID: "sb_1", Deadline: time.Now().Add(time.Minute),
		Command: &approvals.Command{Text: "deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan approvals.Approval, 1)
	go func() {
		ap, _ := w.Wait(ctx)
		got <- ap
	}()
	if _, err := b.Decide(ctx, key, w.Approval().ID, approvals.Decision{Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ap := <-got:
		if ap.State != approvals.Denied || ap.Reason != "not today" || ap.Command == nil || ap.Command.Text != "deploy" {
			t.Errorf("waiter got %+v", ap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a decision through another replica did not reach the waiter")
	}
}
