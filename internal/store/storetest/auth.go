package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

func testRoundTrip(t *testing.T, h *harness) {
	s := h.s
	tn, k, tok, sb := seed(t, s)

	ended := sb
	ended.ID, ended.State, ended.Reason = "sb_2", sandboxrec.Failed, "runtime lost"
	ended.EndedAt = t0.Add(time.Minute)
	ended.Env, ended.Metadata = map[string]string{}, nil // empty reads back as nil
	must(t, s.CreateSandbox(ctx, ended))
	ended.Env = nil

	tests := []struct {
		name string
		get  func() (any, error)
		want any
	}{
		{"GetTenant", func() (any, error) { return s.GetTenant(ctx, tn.ID) }, tn},
		{"TenantByName", func() (any, error) { return s.TenantByName(ctx, tn.Name) }, tn},
		{"ListTenants", func() (any, error) { return s.ListTenants(ctx) }, []tenancy.Tenant{tn}},
		{"KeyByHash", func() (any, error) { return s.KeyByHash(ctx, k.Hash) }, k},
		{"ListKeys tenant", func() (any, error) { return s.ListKeys(ctx, tn.ID) }, []tenancy.Key{k}},
		{"ListKeys all", func() (any, error) { return s.ListKeys(ctx, "") }, []tenancy.Key{k}},
		{"ListKeys other tenant", func() (any, error) { return s.ListKeys(ctx, "ten_none") }, []tenancy.Key(nil)},
		{"TokenByHash", func() (any, error) { return s.TokenByHash(ctx, tok.Hash) }, tok},
		{"GetSandbox", func() (any, error) { return s.GetSandbox(ctx, sb.ID) }, sb},
		{"GetSandbox ended", func() (any, error) { return s.GetSandbox(ctx, ended.ID) }, ended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}

	// Returned times are UTC, whatever zone they were stored in.
	got, err := s.GetSandbox(ctx, sb.ID)
	must(t, err)
	if got.CreatedAt.Location() != time.UTC || !got.EndedAt.IsZero() {
		t.Errorf("CreatedAt in %v, EndedAt %v; want UTC and zero", got.CreatedAt.Location(), got.EndedAt)
	}

	// Tenants list by name, in byte order whatever the server's locale.
	for _, n := range []string{"Zed", "beta", "alpha"} {
		must(t, s.CreateTenant(ctx, tenancy.Tenant{ID: "ten_" + n, Name: n}))
	}
	list, err := s.ListTenants(ctx)
	must(t, err)
	var names []string
	for _, x := range list {
		names = append(names, x.Name)
	}
	if d := cmp.Diff([]string{"Zed", "acme", "alpha", "beta"}, names); d != "" {
		t.Errorf("tenant order (-want +got):\n%s", d)
	}
}

func testUpdateTenantQuota(t *testing.T, h *harness) {
	s := h.s
	tn, _, _, _ := seed(t, s)
	up := tenancy.Tenant{ID: tn.ID, Name: "ignored", MaxSandboxes: 3, MaxMemoryMB: 1, MaxStorageMB: 7, CreatedAt: t0.Add(time.Hour)}
	got, err := s.UpdateTenantQuota(ctx, up)
	must(t, err)
	want := tn
	want.MaxSandboxes, want.MaxMemoryMB, want.MaxStorageMB = 3, 1, 7
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("returned (-want +got):\n%s", d)
	}
	if again, _ := s.GetTenant(ctx, tn.ID); !cmp.Equal(want, again) {
		t.Errorf("stored %+v, want %+v", again, want)
	}
	if _, err := s.UpdateTenantQuota(ctx, tenancy.Tenant{ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing tenant: %v, want ErrNotFound", err)
	}
}

func testConflict(t *testing.T, h *harness) {
	s := h.s
	tn, k, tok, sb := seed(t, s)
	tn2 := tn
	tn2.ID = "ten_2"
	k2 := k
	k2.ID = "key_2"
	tok2 := tok
	tok2.ID = "tok_2"
	tests := []struct {
		name string
		err  error
	}{
		{"tenant id", s.CreateTenant(ctx, tenancy.Tenant{ID: tn.ID, Name: "other"})},
		{"tenant name", s.CreateTenant(ctx, tn2)},
		{"key id", s.CreateKey(ctx, tenancy.Key{ID: k.ID, TenantID: tn.ID, Hash: []byte("other")})},
		{"key hash", s.CreateKey(ctx, k2)},
		{"token id", s.CreateToken(ctx, tenancy.Token{ID: tok.ID, SandboxID: sb.ID, Hash: []byte("other")})},
		{"token hash", s.CreateToken(ctx, tok2)},
		{"sandbox id", s.CreateSandbox(ctx, sb)},
	}
	// Each is of errdefs' kind too, which tenancy (it does not import
	// store) matches; so are the not-found errors below.
	for _, tt := range tests {
		if !errors.Is(tt.err, store.ErrConflict) || !errors.Is(tt.err, errdefs.ErrConflict) {
			t.Errorf("%s: err = %v, want ErrConflict", tt.name, tt.err)
		}
	}
}

func testNotFound(t *testing.T, h *harness) {
	s := h.s
	_, k, tok, sb := seed(t, s)
	missing := sb
	missing.ID = "sb_missing"
	tests := []struct {
		name string
		call func() error
	}{
		{"GetTenant", func() error { _, err := s.GetTenant(ctx, "nope"); return err }},
		{"TenantByName", func() error { _, err := s.TenantByName(ctx, "nope"); return err }},
		{"KeyByHash", func() error { _, err := s.KeyByHash(ctx, []byte("nope")); return err }},
		{"TokenByHash", func() error { _, err := s.TokenByHash(ctx, []byte("nope")); return err }},
		{"GetSandbox", func() error { _, err := s.GetSandbox(ctx, "nope"); return err }},
		{"UpdateSandbox", func() error { return s.UpdateSandbox(ctx, missing) }},
		{"UpdateSandboxSoon", func() error { return s.UpdateSandboxSoon(ctx, missing) }},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, "nope") }},
		{"CreateKey for missing tenant", func() error {
			return s.CreateKey(ctx, tenancy.Key{ID: "key_x", TenantID: "nope", Hash: []byte("x")})
		}},
		{"DeleteKey then KeyByHash", func() error {
			if err := s.DeleteKey(ctx, k.ID); err != nil {
				return err
			}
			_, err := s.KeyByHash(ctx, k.Hash)
			return err
		}},
		{"DeleteTokens then TokenByHash", func() error {
			if err := s.DeleteTokens(ctx, sb.ID); err != nil {
				return err
			}
			_, err := s.TokenByHash(ctx, tok.Hash)
			return err
		}},
	}
	for _, tt := range tests {
		if err := tt.call(); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tt.name, err)
		}
	}
	// Teardown deletes tokens unconditionally; none left is not an error.
	if err := s.DeleteTokens(ctx, sb.ID); err != nil {
		t.Errorf("DeleteTokens with no tokens: %v", err)
	}
	if _, err := s.GetSandbox(ctx, missing.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed update made a record appear: %v", err)
	}
}

// A console session acts as its key until it is deleted or its key is;
// opening one prunes those expired by then.
func testConsoleSessions(t *testing.T, h *harness) {
	s := h.s
	_, k, _, _ := seed(t, s)
	cs := tenancy.ConsoleSession{Hash: []byte("cookie"), KeyID: k.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateConsoleSession(ctx, cs))
	gotCS, gotK, err := s.ConsoleSessionByHash(ctx, cs.Hash)
	must(t, err)
	if d := cmp.Diff([]any{cs, k}, []any{gotCS, gotK}); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
	if err := s.CreateConsoleSession(ctx, tenancy.ConsoleSession{Hash: []byte("x"), KeyID: "key_gone", CreatedAt: t0, ExpiresAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session for a missing key: %v, want ErrNotFound", err)
	}
	// A session opened after the first expired prunes it.
	later := tenancy.ConsoleSession{Hash: []byte("later"), KeyID: k.ID, CreatedAt: t0.Add(2 * time.Hour), ExpiresAt: t0.Add(3 * time.Hour)}
	must(t, s.CreateConsoleSession(ctx, later))
	if _, _, err := s.ConsoleSessionByHash(ctx, cs.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session after a later create: %v, want ErrNotFound", err)
	}
	must(t, s.DeleteConsoleSession(ctx, later.Hash))
	must(t, s.DeleteConsoleSession(ctx, later.Hash)) // twice is fine
	if _, _, err := s.ConsoleSessionByHash(ctx, later.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted session: %v, want ErrNotFound", err)
	}
	// Deleting the key ends its sessions.
	third := tenancy.ConsoleSession{Hash: []byte("third"), KeyID: k.ID, CreatedAt: t0.Add(2 * time.Hour), ExpiresAt: t0.Add(5 * time.Hour)}
	must(t, s.CreateConsoleSession(ctx, third))
	must(t, s.DeleteKey(ctx, k.ID))
	if _, _, err := s.ConsoleSessionByHash(ctx, third.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session of a deleted key: %v, want ErrNotFound", err)
	}
}

// A sandbox's tokens go in the write that ends it, and only then, whether
// the write is UpdateSandbox or UpdateSandboxSoon.
func testEndedSandboxLosesTokens(t *testing.T, h *harness) {
	s := h.s
	seed(t, s)
	_, _, tok, sb := fixture()
	other := tok
	other.ID, other.SandboxID, other.Hash = "tok_other", "sb_other", []byte("other")
	must(t, s.CreateToken(ctx, other))
	i := 0
	for _, soon := range []bool{false, true} {
		for _, state := range []string{sandboxrec.Running, sandboxrec.Stopped, sandboxrec.Failed} {
			i++
			sb.ID, tok.SandboxID = "sb_end_"+string(rune('a'+i)), "sb_end_"+string(rune('a'+i))
			tok.ID, tok.Hash = "tok_"+sb.ID, []byte("hash_"+sb.ID)
			sb.State = sandboxrec.Running
			must(t, s.CreateSandbox(ctx, sb))
			must(t, s.CreateToken(ctx, tok))
			sb.State = state
			update := s.UpdateSandbox
			if soon {
				update = s.UpdateSandboxSoon
			}
			must(t, update(ctx, sb))
			_, err := s.TokenByHash(ctx, tok.Hash)
			if ended := state != sandboxrec.Running; ended != errors.Is(err, store.ErrNotFound) {
				t.Errorf("sandbox saved as %s (soon %v): TokenByHash = %v; want the token gone: %v", state, soon, err, ended)
			}
			if _, err := s.TokenByHash(ctx, other.Hash); err != nil {
				t.Errorf("sandbox saved as %s: another sandbox's token: %v", state, err)
			}
		}
	}
}

func testTokenByHashIgnoresExpiry(t *testing.T, h *harness) {
	s := h.s
	expired := tenancy.Token{ID: "tok_old", SandboxID: "sb_1", TenantID: "ten_1", Hash: []byte("old"), ExpiresAt: time.Unix(1, 0).UTC()}
	must(t, s.CreateToken(ctx, expired))
	got, err := s.TokenByHash(ctx, expired.Hash)
	must(t, err)
	if d := cmp.Diff(expired, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
