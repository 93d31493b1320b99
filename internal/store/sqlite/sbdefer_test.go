package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// TestUpdateSandboxSoon: a deferred update shows at once through the store,
// reaches the database by itself, is written before any read of the table
// and on Close, and never overtakes a later write of the same record.
func TestUpdateSandboxSoon(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTenant(ctx, tenancy.Tenant{ID: "ten_a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	// dbState reads the record with another connection, as a second
	// process would: what the database holds.
	dbState := func(id string) string {
		t.Helper()
		other, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		sb, err := other.GetSandbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sb.State
	}
	mk := func(id string) sandboxrec.Sandbox {
		sb := sandboxrec.Sandbox{ID: id, TenantID: "ten_a", State: sandboxrec.Creating, Template: "base", CPUs: 1, MemoryMB: 64, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		if err := s.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		return sb
	}

	sb := mk("sb-soon")
	sb.State = sandboxrec.Running
	if err := s.UpdateSandboxSoon(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSandbox(ctx, sb.ID); got.State != sandboxrec.Running {
		t.Errorf("through the store: %s", got.State)
	}
	// It reaches the database on its own.
	deadline := time.Now().Add(5 * time.Second)
	for dbState(sb.ID) != sandboxrec.Running {
		if time.Now().After(deadline) {
			t.Fatal("the deferred write never reached the database")
		}
		time.Sleep(time.Millisecond)
	}

	// A read of the table writes what is pending first.
	sb2 := mk("sb-list")
	sb2.State = sandboxrec.Running
	s.UpdateSandboxSoon(ctx, sb2)
	if n, _, err := s.Usage(ctx, "ten_a"); err != nil || n != 2 {
		t.Errorf("usage %d %v", n, err)
	}
	list, err := s.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running})
	if err != nil || len(list) != 2 {
		t.Errorf("list of running: %d %v", len(list), err)
	}

	// A later write wins, however the deferred one is timed.
	for i := 0; i < 50; i++ {
		sb2.State = sandboxrec.Running
		s.UpdateSandboxSoon(ctx, sb2)
		sb2.State, sb2.Reason = sandboxrec.Stopped, "deleted"
		if err := s.UpdateSandbox(ctx, sb2); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		if got := dbState(sb2.ID); got != sandboxrec.Stopped {
			t.Fatalf("round %d: a deferred write overtook a later one: %s", i, got)
		}
	}

	// A deferred stop deletes the sandbox's tokens before any token lookup.
	sb4 := mk("sb-token")
	sb4.State = sandboxrec.Running
	s.UpdateSandbox(ctx, sb4)
	if err := s.CreateToken(ctx, tenancy.Token{ID: "tok_x", SandboxID: sb4.ID, TenantID: "ten_a", Hash: []byte("h"), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	sb4.State = sandboxrec.Stopped
	s.UpdateSandboxSoon(ctx, sb4)
	if _, err := s.TokenByHash(ctx, []byte("h")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token of a stopped sandbox: %v", err)
	}

	// Close writes what is pending.
	sb3 := mk("sb-close")
	sb3.State = sandboxrec.Running
	s.UpdateSandboxSoon(ctx, sb3)
	s.Close()
	if got := dbState(sb3.ID); got != sandboxrec.Running {
		t.Errorf("after close: %s", got)
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.UpdateSandboxSoon(ctx, sandboxrec.Sandbox{ID: "sb-none", TenantID: "ten_a", State: sandboxrec.Running}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deferred update of a missing record: %v", err)
	}
}

// TestFlushUnderWay: a read that finds nothing pending because a flush has
// just taken it waits for that flush's write, rather than reading the row
// the flush is about to replace.
func TestFlushUnderWay(t *testing.T) {
	ctx := context.Background()
	s, sb := storeWithSandbox(t, "sb-flush", sandboxrec.Running)
	taken, release := make(chan struct{}), make(chan struct{})
	flushTaken = func() {
		close(taken)
		<-release
	}
	defer func() { flushTaken = nil }()
	sb.State = sandboxrec.Stopped
	if err := s.UpdateSandboxSoon(ctx, sb); err != nil {
		t.Fatal(err)
	}
	<-taken // the timer's flush holds the record now
	listed := make(chan []sandboxrec.Sandbox, 1)
	go func() {
		l, err := s.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running})
		if err != nil {
			t.Error(err)
		}
		listed <- l
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if l := <-listed; len(l) != 0 {
		t.Errorf("a list during a flush saw the row it was replacing: %+v", l)
	}
}

// TestFlushKeepsNewer: a record updated again while a flush writes the
// older version reads as the newer one throughout, in the cache too.
func TestFlushKeepsNewer(t *testing.T) {
	ctx := context.Background()
	s, sb := storeWithSandbox(t, "sb-newer", sandboxrec.Creating)
	taken := []chan struct{}{make(chan struct{}), make(chan struct{})}
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	calls := 0
	flushTaken = func() {
		i := calls
		calls++
		close(taken[i])
		<-release[i]
	}
	defer func() { flushTaken = nil }()
	sb.State = sandboxrec.Running
	s.UpdateSandboxSoon(ctx, sb)
	<-taken[0] // the first flush holds running
	sb.State = sandboxrec.Stopped
	s.UpdateSandboxSoon(ctx, sb)
	close(release[0])
	<-taken[1] // the first flush has written running; the second holds stopped
	got, err := s.GetSandbox(ctx, sb.ID)
	close(release[1])
	if err != nil || got.State != sandboxrec.Stopped {
		t.Errorf("between the two flushes the record reads %s (%v), want stopped", got.State, err)
	}
}

// storeWithSandbox opens a fresh store holding one sandbox of a tenant, in
// the given state.
func storeWithSandbox(t *testing.T, id, state string) (*Store, sandboxrec.Sandbox) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateTenant(ctx, tenancy.Tenant{ID: "ten_a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	sb := sandboxrec.Sandbox{ID: id, TenantID: "ten_a", State: state, Template: "base", CPUs: 1, MemoryMB: 64, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	return s, sb
}
