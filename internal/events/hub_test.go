package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

func testBox(t *testing.T) *secrets.Box {
	b, err := secrets.NewBox(make([]byte, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newHub starts a hub on st with quick retries; opts' non-zero fields win.
func newHub(t *testing.T, st store.Store, opts Options) *Hub {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RetryBase == 0 {
		opts.RetryBase, opts.RetryMaxDelay = time.Millisecond, 10*time.Millisecond
	}
	h, err := New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// ev is an audit event as the sandbox service records it.
func ev(tenant, sandbox, typ string) audit.Event {
	data, _ := json.Marshal(map[string]string{"sandbox": sandbox})
	return audit.Event{Time: time.Now().UTC().Truncate(time.Microsecond), Sandbox: sandbox, Tenant: tenant,
		Actor: "key_x", Type: typ, Data: data}
}

// follower follows a tenant's stream in the background.
type follower struct {
	got    chan Event
	done   chan error
	cancel context.CancelFunc
}

func follow(t *testing.T, h *Hub, tenant string, after int64, types ...string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{got: make(chan Event, 100), done: make(chan error, 1), cancel: cancel}
	go func() {
		f.done <- h.Follow(ctx, tenant, after, types, nil, func(e Event) error {
			f.got <- e
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// next waits for n events.
func (f *follower) next(t *testing.T, n int) []Event {
	t.Helper()
	var out []Event
	for len(out) < n {
		select {
		case e := <-f.got:
			out = append(out, e)
		case err := <-f.done:
			t.Fatalf("stream ended after %d of %d events: %v", len(out), n, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

// none checks that nothing more came once everything published is
// through the hub.
func (f *follower) none(t *testing.T, h *Hub) {
	t.Helper()
	h.Flush()
	select {
	case e := <-f.got:
		t.Errorf("unexpected event %+v", e)
	default:
	}
}

type brief struct {
	ID      int64
	Type    string
	Sandbox string
}

func briefs(evs []Event) []brief {
	var out []brief
	for _, e := range evs {
		out = append(out, brief{e.ID, e.Type, e.SandboxID})
	}
	return out
}

// waitSubscribed waits until n live subscribers are registered.
func waitSubscribed(t *testing.T, h *Hub, tenant string, n int) {
	t.Helper()
	waitFor(t, "subscribers", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.subs[tenant]) == n
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestFollowOwnTenantOnly(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{})
	a := follow(t, h, "ten_a", -1)
	b := follow(t, h, "ten_b", -1)
	waitSubscribed(t, h, "ten_a", 1)
	waitSubscribed(t, h, "ten_b", 1)

	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	h.Publish(ev("ten_b", "sb_2", audit.SandboxCreated))
	h.Publish(ev("ten_a", "sb_1", audit.ExecStarted)) // not on the stream
	h.Publish(ev("ten_a", "sb_1", audit.ExecOutput))  // not on the stream
	h.Publish(ev("ten_a", "sb_1", audit.ExecExited))
	h.Publish(ev("ten_a", "sb_1", audit.SandboxDestroyed))

	want := []brief{{1, audit.SandboxCreated, "sb_1"}, {3, audit.ExecExited, "sb_1"}, {4, audit.SandboxDestroyed, "sb_1"}}
	if d := cmp.Diff(want, briefs(a.next(t, 3))); d != "" {
		t.Errorf("tenant a (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]brief{{2, audit.SandboxCreated, "sb_2"}}, briefs(b.next(t, 1))); d != "" {
		t.Errorf("tenant b (-want +got):\n%s", d)
	}
	a.none(t, h)
	b.none(t, h)
}

func TestFollowResume(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{})
	first := follow(t, h, "ten_a", -1)
	waitSubscribed(t, h, "ten_a", 1)
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	seen := first.next(t, 1)[0]
	first.cancel()
	waitSubscribed(t, h, "ten_a", 0)

	// While the client is away.
	h.Publish(ev("ten_a", "sb_1", audit.ExecExited))
	h.Publish(ev("ten_b", "sb_2", audit.SandboxCreated))
	h.Publish(ev("ten_a", "sb_1", audit.SandboxDestroyed))
	h.Flush()

	again := follow(t, h, "ten_a", seen.ID)
	if d := cmp.Diff([]brief{{2, audit.ExecExited, "sb_1"}, {4, audit.SandboxDestroyed, "sb_1"}}, briefs(again.next(t, 2))); d != "" {
		t.Errorf("missed events (-want +got):\n%s", d)
	}
	// Then it follows live, without repeating anything.
	waitSubscribed(t, h, "ten_a", 1)
	h.Publish(ev("ten_a", "sb_3", audit.SandboxCreated))
	if d := cmp.Diff([]brief{{5, audit.SandboxCreated, "sb_3"}}, briefs(again.next(t, 1))); d != "" {
		t.Errorf("live after replay (-want +got):\n%s", d)
	}
	again.none(t, h)

	// A type filter applies to the replay and to live events.
	filtered := follow(t, h, "ten_a", 0, audit.SandboxDestroyed)
	if d := cmp.Diff([]brief{{4, audit.SandboxDestroyed, "sb_1"}}, briefs(filtered.next(t, 1))); d != "" {
		t.Errorf("filtered (-want +got):\n%s", d)
	}
	filtered.none(t, h)
}

// A client resumes after the last id it saw across a daemon restart.
func TestResumeAcrossRestart(t *testing.T) {
	st, reopen := teststore.OpenReopen(t)
	h := newHub(t, st, Options{})
	for _, typ := range []string{audit.SandboxCreated, audit.ExecExited, audit.SandboxExpired} {
		h.Publish(ev("ten_a", "sb_1", typ))
	}
	h.Close()
	st.Close()

	st2 := reopen(t)
	h2 := newHub(t, st2, Options{})
	f := follow(t, h2, "ten_a", 1)
	if d := cmp.Diff([]brief{{2, audit.ExecExited, "sb_1"}, {3, audit.SandboxExpired, "sb_1"}}, briefs(f.next(t, 2))); d != "" {
		t.Errorf("after restart (-want +got):\n%s", d)
	}
	waitSubscribed(t, h2, "ten_a", 1)
	h2.Publish(ev("ten_a", "sb_1", audit.SandboxDestroyed))
	if got := f.next(t, 1)[0]; got.ID != 4 {
		t.Errorf("new event after restart has id %d, want 4", got.ID)
	}
}

// A subscriber that stops reading is dropped with ErrSlow; the hub and the
// other subscribers carry on.
func TestSlowSubscriberDropped(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{Buffer: 2})
	block := make(chan struct{})
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- h.Follow(context.Background(), "ten_a", -1, nil, nil, func(Event) error {
			<-block
			return nil
		})
	}()
	fast := follow(t, h, "ten_a", -1)
	waitSubscribed(t, h, "ten_a", 2)
	for range 10 {
		h.Publish(ev("ten_a", "sb_1", audit.ExecExited))
		h.Flush() // one event per batch: the fast reader keeps up
		fast.next(t, 1)
	}
	select {
	case err := <-slowDone:
		t.Errorf("slow follower ended before unblocking: %v", err)
	default:
	}
	close(block) // it gets what its buffer held, then the end
	if err := <-slowDone; !errors.Is(err, ErrSlow) {
		t.Errorf("slow follower ended with %v, want ErrSlow", err)
	}
}

func TestCloseEndsStreams(t *testing.T) {
	st := teststore.Open(t)
	before := runtime.NumGoroutine()
	h, err := New(context.Background(), st, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- h.Follow(context.Background(), "ten_a", -1, nil, nil, func(Event) error { return nil })
	}()
	waitSubscribed(t, h, "ten_a", 1)
	h.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("follow ended with %v, want ErrClosed", err)
	}
	// Publishing after Close neither blocks nor panics.
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	// The writer, the dispatcher and the follower are gone.
	waitFor(t, "the hub's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
