package tenancy_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/postgres"
	"github.com/airlockhq/airlock/internal/store/sqlite"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Both stores serve tenancy.
var (
	_ tenancy.Store = (*sqlite.Store)(nil)
	_ tenancy.Store = (*postgres.Store)(nil)
)

// clock is a test clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	st    store.Store
	clock *clock
	svc   *tenancy.Service
}

func newEnv(t *testing.T) env {
	t.Helper()
	st := teststore.Open(t)
	c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return env{st: st, clock: c, svc: tenancy.New(st, tenancy.Options{Now: c.Now})}
}

// key makes a tenant named tenant and a key of it, and returns the key.
func (e env) key(t *testing.T, tenant string) tenancy.CreatedKey {
	t.Helper()
	ctx := context.Background()
	if _, err := e.svc.CreateTenant(ctx, tenancy.Tenant{Name: tenant}); err != nil {
		t.Fatal(err)
	}
	k, err := e.svc.CreateKey(ctx, tenant, "ci")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k := e.key(t, "acme")
	tok, rec, err := e.svc.MintToken(ctx, "sb_1", k.Key.TenantID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.ExpiresAt.Equal(e.clock.Now().Add(time.Minute)) {
		t.Errorf("token expires at %v, want a minute from now", rec.ExpiresAt)
	}
	unknownKey, _ := tenancy.NewKey()
	unknownToken, _ := tenancy.NewToken()
	for _, tc := range []struct {
		name, cred string
		want       tenancy.Principal
		wantErr    error
	}{
		{"key", k.Plaintext, tenancy.Principal{TenantID: k.Key.TenantID, KeyID: k.Key.ID}, nil},
		{"token", tok, tenancy.Principal{TenantID: k.Key.TenantID, SandboxID: "sb_1"}, nil},
		{"unknown key", unknownKey, tenancy.Principal{}, tenancy.ErrBadCredential},
		{"unknown token", unknownToken, tenancy.Principal{}, tenancy.ErrBadCredential},
		{"no prefix", "hunter2", tenancy.Principal{}, tenancy.ErrBadCredential},
		// The key's hash is not a credential of its own.
		{"hash of a key", string(k.Key.Hash), tenancy.Principal{}, tenancy.ErrBadCredential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.svc.Authenticate(ctx, tc.cred)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("principal (-want +got):\n%s", d)
			}
		})
	}
}

func TestAuthenticateExpiredToken(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k := e.key(t, "acme")
	tok, _, err := e.svc.MintToken(ctx, "sb_1", k.Key.TenantID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.advance(time.Minute - time.Second)
	if _, err := e.svc.Authenticate(ctx, tok); err != nil {
		t.Fatalf("token a second before expiry: %v", err)
	}
	e.clock.advance(time.Second)
	if _, err := e.svc.Authenticate(ctx, tok); !errors.Is(err, tenancy.ErrBadCredential) {
		t.Fatalf("token at expiry: err = %v, want ErrBadCredential", err)
	}
}

// A key deleted through the Service stops at once, though it was cached;
// one deleted behind its back (another daemon on the store) lasts until
// the cache entry goes stale.
func TestAuthenticateDeletedKey(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	a, b := e.key(t, "acme"), e.key(t, "globex")
	for _, k := range []tenancy.CreatedKey{a, b} {
		if _, err := e.svc.Authenticate(ctx, k.Plaintext); err != nil { // cached now
			t.Fatal(err)
		}
	}

	if err := e.svc.DeleteKey(ctx, a.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(ctx, a.Plaintext); !errors.Is(err, tenancy.ErrBadCredential) {
		t.Errorf("key deleted through the Service: err = %v, want ErrBadCredential", err)
	}

	if err := e.st.DeleteKey(ctx, b.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(ctx, b.Plaintext); err != nil {
		t.Errorf("key deleted behind the cache's back, before the TTL: %v (want the cached key)", err)
	}
	e.clock.advance(5 * time.Second)
	if _, err := e.svc.Authenticate(ctx, b.Plaintext); !errors.Is(err, tenancy.ErrBadCredential) {
		t.Errorf("key deleted behind the cache's back, past the TTL: err = %v, want ErrBadCredential", err)
	}
}

// With NoKeyCache, a key deleted behind the Service's back (through the
// leading replica) stops at once.
func TestAuthenticateNoKeyCache(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k := e.key(t, "acme")
	follower := tenancy.New(e.st, tenancy.Options{Now: e.clock.Now, NoKeyCache: true})
	p, err := follower.Authenticate(ctx, k.Plaintext)
	if err != nil || p.KeyID != k.Key.ID {
		t.Fatalf("authenticate: %+v, %v", p, err)
	}
	if err := e.svc.DeleteKey(ctx, k.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.Authenticate(ctx, k.Plaintext); !errors.Is(err, tenancy.ErrBadCredential) {
		t.Errorf("key deleted through another Service: err = %v, want ErrBadCredential", err)
	}
}

func TestConsoleSession(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	k := e.key(t, "acme")
	if _, _, err := e.svc.CreateConsoleSession(ctx, "alt_notakey"); !errors.Is(err, tenancy.ErrBadCredential) {
		t.Errorf("sign in with a token: err = %v, want ErrBadCredential", err)
	}
	cookie, cs, err := e.svc.CreateConsoleSession(ctx, k.Plaintext)
	if err != nil {
		t.Fatal(err)
	}
	want := tenancy.Session{
		Principal: tenancy.Principal{TenantID: k.Key.TenantID, KeyID: k.Key.ID},
		ExpiresAt: e.clock.Now().Add(tenancy.ConsoleSessionTTL),
	}
	if d := cmp.Diff(want, cs); d != "" {
		t.Errorf("new session (-want +got):\n%s", d)
	}
	got, err := e.svc.ConsoleSession(ctx, cookie)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("looked-up session (-want +got):\n%s", d)
	}
	if _, err := e.svc.ConsoleSession(ctx, tenancy.SessionPrefix+"forged"); !errors.Is(err, tenancy.ErrBadSession) {
		t.Errorf("forged cookie: err = %v, want ErrBadSession", err)
	}
	if err := e.svc.DeleteConsoleSession(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ConsoleSession(ctx, cookie); !errors.Is(err, tenancy.ErrBadSession) {
		t.Errorf("signed-out cookie: err = %v, want ErrBadSession", err)
	}
}
