package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

func secretFixture() []store.Secret {
	return []store.Secret{
		{TenantID: "ten_1", Name: "OPENAI_API_KEY", Hosts: []string{"api.openai.com"},
			Inject: `{"header":"Authorization","format":"Bearer {value}"}`, Body: true,
			Sealed: []byte{0, 1, 2, 0xff, 0}, CreatedAt: t0},
		{TenantID: "ten_1", Name: "GITHUB_TOKEN", Hosts: []string{"api.github.com", "*.githubusercontent.com:443"},
			Sealed: []byte("sealed-gh"), CreatedAt: t0.Add(time.Second)},
		// Same name, other tenant: another secret.
		{TenantID: "ten_2", Name: "GITHUB_TOKEN", Hosts: []string{"ghe.example.com"},
			Sealed: []byte("sealed-ghe"), CreatedAt: t0.Add(2 * time.Second), RotatedAt: t0.Add(time.Hour)},
	}
}

func seedSecrets(t *testing.T, s store.Store) []store.Secret {
	t.Helper()
	secs := secretFixture()
	for _, sec := range secs {
		must(t, s.CreateSecret(ctx, sec))
	}
	return secs
}

func testSecretRoundTrip(t *testing.T, h *harness) {
	s := h.s
	secs := seedSecrets(t, s)
	openai, gh, ghe := secs[0], secs[1], secs[2]
	tests := []struct {
		name string
		get  func() (any, error)
		want any
	}{
		{"GetSecret", func() (any, error) { return s.GetSecret(ctx, "ten_1", openai.Name) }, openai},
		{"GetSecret no inject", func() (any, error) { return s.GetSecret(ctx, "ten_1", gh.Name) }, gh},
		{"GetSecret other tenant", func() (any, error) { return s.GetSecret(ctx, "ten_2", ghe.Name) }, ghe},
		{"ListSecrets by name", func() (any, error) { return s.ListSecrets(ctx, "ten_1") }, []store.Secret{gh, openai}},
		{"ListSecrets other tenant", func() (any, error) { return s.ListSecrets(ctx, "ten_2") }, []store.Secret{ghe}},
		{"ListSecrets none", func() (any, error) { return s.ListSecrets(ctx, "ten_3") }, []store.Secret(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get()
			must(t, err)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}
}

func testUpdateSecret(t *testing.T, h *harness) {
	s := h.s
	secs := seedSecrets(t, s)
	up := secs[0]
	up.Hosts = []string{"api.openai.com", "eu.api.openai.com"}
	up.Inject, up.Body = "", false
	up.Sealed = []byte("rotated")
	up.RotatedAt = t0.Add(24 * time.Hour)
	up.CreatedAt = t0.Add(99 * time.Hour) // not replaced: creation is history
	must(t, s.UpdateSecret(ctx, up))
	want := up
	want.CreatedAt = secs[0].CreatedAt
	got, err := s.GetSecret(ctx, up.TenantID, up.Name)
	must(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	other, err := s.GetSecret(ctx, "ten_2", secs[2].Name)
	must(t, err)
	if d := cmp.Diff(secs[2], other); d != "" {
		t.Errorf("other tenant's secret changed (-want +got):\n%s", d)
	}
	// Nil hosts are stored as an empty list, never NULL.
	up.Hosts = nil
	must(t, s.UpdateSecret(ctx, up))
	if got, err := s.GetSecret(ctx, up.TenantID, up.Name); err != nil || got.Hosts == nil || len(got.Hosts) != 0 {
		t.Errorf("nil hosts read back as %#v, %v; want []string{}", got.Hosts, err)
	}
}

func testSecretConflict(t *testing.T, h *harness) {
	s := h.s
	secs := seedSecrets(t, s)
	dup := secs[1]
	dup.Sealed, dup.Hosts = []byte("other"), []string{"other.example.com"}
	if err := s.CreateSecret(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("create existing (tenant, name): %v, want ErrConflict", err)
	}
	got, err := s.GetSecret(ctx, secs[1].TenantID, secs[1].Name)
	must(t, err)
	if d := cmp.Diff(secs[1], got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func testSecretNotFound(t *testing.T, h *harness) {
	s := h.s
	secs := seedSecrets(t, s)
	openai := secs[0]
	wrongTenant := openai
	wrongTenant.TenantID = "ten_2"
	tests := []struct {
		name string
		call func() error
	}{
		{"GetSecret", func() error { _, err := s.GetSecret(ctx, "ten_1", "NOPE"); return err }},
		{"GetSecret other tenant's name", func() error { _, err := s.GetSecret(ctx, "ten_2", openai.Name); return err }},
		{"UpdateSecret", func() error { return s.UpdateSecret(ctx, store.Secret{TenantID: "ten_1", Name: "NOPE"}) }},
		{"UpdateSecret other tenant's name", func() error { return s.UpdateSecret(ctx, wrongTenant) }},
		{"DeleteSecret", func() error { return s.DeleteSecret(ctx, "ten_1", "NOPE") }},
		{"DeleteSecret other tenant's name", func() error { return s.DeleteSecret(ctx, "ten_2", openai.Name) }},
		{"DeleteSecret then GetSecret", func() error {
			if err := s.DeleteSecret(ctx, "ten_1", openai.Name); err != nil {
				return err
			}
			_, err := s.GetSecret(ctx, "ten_1", openai.Name)
			return err
		}},
		{"DeleteSecret twice", func() error { return s.DeleteSecret(ctx, "ten_1", openai.Name) }},
	}
	for _, tt := range tests {
		if err := tt.call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tt.name, err)
		}
	}
	must(t, s.DeleteSecret(ctx, "ten_1", secs[1].Name))
	got, err := s.ListSecrets(ctx, "ten_2")
	must(t, err)
	if d := cmp.Diff([]store.Secret{secs[2]}, got); d != "" {
		t.Errorf("ten_2 after ten_1's deletes (-want +got):\n%s", d)
	}
	if left, err := s.ListSecrets(ctx, "ten_1"); err != nil || len(left) != 0 {
		t.Errorf("ten_1 after deleting both: %v, %v", left, err)
	}
}

func testSandboxSecretsField(t *testing.T, h *harness) {
	s := h.s
	_, _, _, sb := seed(t, s)
	if got, err := s.GetSandbox(ctx, sb.ID); err != nil || got.Secrets != "" {
		t.Fatalf("sandbox without secrets: %q, %v", got.Secrets, err)
	}
	sb.Secrets = `{"GITHUB_TOKEN":"airlock-ph-0123456789abcdef0123456789abcdef01234567"}`
	must(t, s.UpdateSandbox(ctx, sb))
	withSecrets := sb
	withSecrets.ID = "sb_2"
	must(t, s.CreateSandbox(ctx, withSecrets))
	for _, want := range []sandboxrec.Sandbox{sb, withSecrets} {
		got, err := s.GetSandbox(ctx, want.ID)
		must(t, err)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: -want +got:\n%s", want.ID, d)
		}
	}
	list, err := s.ListSandboxes(ctx, sandboxrec.Filter{TenantID: sb.TenantID})
	must(t, err)
	if d := cmp.Diff([]sandboxrec.Sandbox{sb, withSecrets}, list); d != "" {
		t.Errorf("ListSandboxes -want +got:\n%s", d)
	}
}

// testSecretsReopen: secrets and a sandbox's bindings survive a restart.
func testSecretsReopen(t *testing.T, h *harness) {
	secs := seedSecrets(t, h.s)
	_, _, _, sb := fixture()
	sb.Secrets = `{"OPENAI_API_KEY":"airlock-ph-00000000000000000000000000000000000000aa"}`
	must(t, h.s.CreateSandbox(ctx, sb))
	s := h.restart(t)
	ten1, err1 := s.ListSecrets(ctx, "ten_1")
	ten2, err2 := s.ListSecrets(ctx, "ten_2")
	gotSB, err3 := s.GetSandbox(ctx, sb.ID)
	must(t, errors.Join(err1, err2, err3))
	want := []any{[]store.Secret{secs[1], secs[0]}, []store.Secret{secs[2]}, sb}
	if d := cmp.Diff(want, []any{ten1, ten2, gotSB}); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
