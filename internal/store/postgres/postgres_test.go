package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/storetest"
	"github.com/airlockhq/airlock/internal/tenancy"
	"github.com/airlockhq/airlock/internal/testenv"
)

// openURL opens a store on url, closed when t ends.
func openURL(t *testing.T, url string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// TestConformance runs the suite every store passes, each subtest on a
// database of its own.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(*testing.T) store.Store) {
		url := testenv.NewDatabase(t)
		return openURL(t, url), func(t *testing.T) store.Store { return openURL(t, url) }
	})
}

// TestReplicasMigrateTogether: replicas starting at once on an empty
// database queue on the migration's lock; each finds the schema current.
func TestReplicasMigrateTogether(t *testing.T) {
	url := testenv.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := Open(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a replica failed to start: %v", err)
	}
	s := openURL(t, url)
	defer s.Close()
	var v int
	if err := s.pool.QueryRow(context.Background(), `SELECT version FROM schema_version`).Scan(&v); err != nil || v != len(migrations) {
		t.Errorf("schema_version = %d, %v; want %d", v, err, len(migrations))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	url := testenv.NewDatabase(t)
	s := openURL(t, url)
	if _, err := s.exec(context.Background(), `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := Open(context.Background(), url); err == nil || !strings.Contains(err.Error(), "newer") {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("opened a database from a newer binary: %v", err)
	}
}

// TestReplicasShareState: what one replica writes, another reads at once
// (there is no cache to go stale), and their appends to one event stream
// and one audit log interleave without a duplicate, a gap seen late or a
// broken chain.
func TestReplicasShareState(t *testing.T) {
	url := testenv.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	sb := sandboxrec.Sandbox{ID: "sb_1", TenantID: "ten", State: sandboxrec.Creating, Template: "t"}
	if err := a.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateToken(ctx, tenancy.Token{ID: "tok", SandboxID: sb.ID, TenantID: "ten", Hash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{sandboxrec.Running, sandboxrec.Stopped} {
		sb.State = state
		if err := a.UpdateSandboxSoon(ctx, sb); err != nil {
			t.Fatal(err)
		}
		if got, err := b.GetSandbox(ctx, sb.ID); err != nil || got.State != state {
			t.Errorf("the other replica reads %q, %v; want %q", got.State, err, state)
		}
	}
	if _, err := b.TokenByHash(ctx, []byte("h")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the other replica still finds a stopped sandbox's token: %v", err)
	}

	// Both replicas append; a follower on b reads "after the last seen".
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b, a, b} {
		wg.Go(func() {
			for range 30 {
				if err := s.AppendEvents(ctx, []eventrec.Event{{TenantID: "ten", SandboxID: "sb", Type: "x", Time: time.Now(), Data: []byte(`{}`)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var seen []int64
	var fw sync.WaitGroup
	fw.Go(func() {
		last := int64(0)
		for {
			finished := false
			select {
			case <-done:
				finished = true
			default:
			}
			page, err := b.TenantEvents(ctx, "ten", last, nil, 5)
			if err != nil {
				t.Error(err)
				return
			}
			for _, e := range page {
				seen = append(seen, e.ID)
				last = e.ID
			}
			if finished && len(page) == 0 {
				return // caught up; an event below last is never read
			}
		}
	})
	wg.Wait()
	close(done)
	fw.Wait()
	all, err := a.TenantEvents(ctx, "ten", 0, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var stored []int64
	for _, e := range all {
		stored = append(stored, e.ID)
	}
	if len(stored) != 120 {
		t.Errorf("stored %d events, want 120", len(stored))
	}
	if d := cmp.Diff(stored, seen); d != "" {
		t.Errorf("the follower missed events (-stored +seen):\n%s", d)
	}
	if n, err := b.StorageBytes(ctx, "ten"); err != nil || n != 120*(2+store.EventRowBytes) {
		t.Errorf("storage as the other replica reads it: %d, %v", n, err)
	}
}

// TestListenNotify: a notification from one replica reaches the other's
// listener, on a channel name that needs quoting.
func TestListenNotify(t *testing.T) {
	url := testenv.NewDatabase(t)
	a, b := openURL(t, url), openURL(t, url)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 10)
	var lw sync.WaitGroup
	lw.Go(func() {
		if err := b.Listen(ctx, "airlock cache", func(p string) { got <- p }); !errors.Is(err, context.Canceled) {
			t.Errorf("Listen returned %v, want context.Canceled", err)
		}
	})
	defer func() { cancel(); lw.Wait() }()
	// LISTEN takes effect asynchronously: notify until one arrives.
	deadline := time.After(20 * time.Second)
	for {
		if err := a.Notify(context.Background(), "airlock cache", "sb_1"); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p != "sb_1" {
				t.Fatalf("payload %q, want sb_1", p)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification arrived")
		}
	}
}
