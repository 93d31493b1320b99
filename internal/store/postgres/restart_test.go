package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tenancy"
	"github.com/airlockhq/airlock/internal/testenv"
)

// retry calls fn until it succeeds or 30 s have passed: the first calls
// after a restart may find the pool's old connections dead.
func retry(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the restart: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDatabaseRestart restarts the server under a store, fast and then as
// a crash, with a writer running: every write the store acknowledged is
// there afterwards, the store works again without being reopened, and
// Listen reports the gap with fn("").
func TestDatabaseRestart(t *testing.T) {
	srv := testenv.StartPostgres(t)
	s := openURL(t, srv.URL)
	defer s.Close()
	ctx := context.Background()

	var gaps atomic.Int64
	got := make(chan string, 100)
	lctx, stop := context.WithCancel(ctx)
	var lw sync.WaitGroup
	lw.Go(func() {
		s.Listen(lctx, "cache", func(p string) {
			if p == "" {
				gaps.Add(1)
				return
			}
			select {
			case got <- p:
			default:
			}
		})
	})
	defer func() { stop(); lw.Wait() }()
	heard := func(step string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			if err := s.Notify(ctx, "cache", step); err != nil {
				t.Logf("notify: %v", err)
			}
			select {
			case p := <-got:
				if p == step {
					return
				}
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: the listener heard nothing", step)
			}
		}
	}
	heard("before")

	if err := s.CreateTenant(ctx, tenancy.Tenant{ID: "ten", Name: "t"}); err != nil {
		t.Fatal(err)
	}
	sb := sandboxrec.Sandbox{ID: "sb", TenantID: "ten", State: sandboxrec.Running, Template: "x"}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}

	for i, mode := range []string{"fast", "immediate"} {
		// A writer appends until told to stop, across the restart; what it
		// was told succeeded must be stored.
		var acked []int64
		var failed atomic.Int64
		done := make(chan struct{})
		var ww sync.WaitGroup
		ww.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ev := []eventrec.Event{{TenantID: "ten", SandboxID: "sb", Type: mode, Time: time.Now(), Data: []byte(`{}`)}}
				if err := s.AppendEvents(ctx, ev); err != nil {
					failed.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				acked = append(acked, ev[0].ID)
			}
		})
		time.Sleep(200 * time.Millisecond)
		sb.Reason = mode
		if err := s.UpdateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t, mode == "immediate")
		time.Sleep(300 * time.Millisecond)
		close(done)
		ww.Wait()
		t.Logf("restart -m %s: %d appends acknowledged, %d failed", mode, len(acked), failed.Load())

		var stored []eventrec.Event
		retry(t, "read events", func() error {
			var err error
			stored, err = s.TenantEvents(ctx, "ten", 0, []string{mode}, 1_000_000)
			return err
		})
		have := map[int64]bool{}
		for _, e := range stored {
			have[e.ID] = true
		}
		for _, id := range acked {
			if !have[id] {
				t.Errorf("restart -m %s: acknowledged event %d is gone", mode, id)
			}
		}
		if got, err := s.GetSandbox(ctx, sb.ID); err != nil || got.Reason != mode {
			t.Errorf("restart -m %s: sandbox %+v, %v", mode, got, err)
		}
		// New calls work without reopening the store.
		if err := s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: "sb_after_" + mode, TenantID: "ten", State: sandboxrec.Creating}); err != nil {
			t.Errorf("restart -m %s: a new write: %v", mode, err)
		}
		if n, _, err := s.Usage(ctx, "ten"); err != nil || n != 2+i {
			t.Errorf("restart -m %s: usage %d, %v", mode, n, err)
		}
		// The listener came back, and said notifications may be lost.
		heard("after " + mode)
		if g := gaps.Load(); g != int64(i+1) {
			t.Errorf("restart -m %s: Listen reported %d gaps, want %d", mode, g, i+1)
		}
	}
	if err := s.Notify(ctx, "", "x"); err == nil {
		t.Log("pg_notify accepted an empty channel") // PostgreSQL refuses it; not ours to pin
	}
	if err := s.Listen(ctx, "", func(string) {}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Listen on no channel: %v", err)
	}
}
