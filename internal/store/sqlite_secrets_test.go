package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func secretFixture() []Secret {
	return []Secret{
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

func seedSecrets(t *testing.T, s Store) []Secret {
	t.Helper()
	secs := secretFixture()
	for _, sec := range secs {
		if err := s.CreateSecret(context.Background(), sec); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return secs
}

func TestSecretRoundTrip(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
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
		{"ListSecrets by name", func() (any, error) { return s.ListSecrets(ctx, "ten_1") }, []Secret{gh, openai}},
		{"ListSecrets other tenant", func() (any, error) { return s.ListSecrets(ctx, "ten_2") }, []Secret{ghe}},
		{"ListSecrets none", func() (any, error) { return s.ListSecrets(ctx, "ten_3") }, []Secret(nil)},
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
}

func TestUpdateSecret(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	secs := seedSecrets(t, s)

	up := secs[0]
	up.Hosts = []string{"api.openai.com", "eu.api.openai.com"}
	up.Inject, up.Body = "", false
	up.Sealed = []byte("rotated")
	up.RotatedAt = t0.Add(24 * time.Hour)
	up.CreatedAt = t0.Add(99 * time.Hour) // not replaced: creation is history
	if err := s.UpdateSecret(ctx, up); err != nil {
		t.Fatal(err)
	}
	want := up
	want.CreatedAt = secs[0].CreatedAt
	got, err := s.GetSecret(ctx, up.TenantID, up.Name)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	// The other tenant's secret of the same name is untouched.
	other, err := s.GetSecret(ctx, "ten_2", secs[2].Name)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(secs[2], other); d != "" {
		t.Errorf("other tenant's secret changed (-want +got):\n%s", d)
	}
	// Nil hosts are stored as an empty list, never NULL.
	up.Hosts = nil
	if err := s.UpdateSecret(ctx, up); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetSecret(ctx, up.TenantID, up.Name); err != nil || got.Hosts == nil || len(got.Hosts) != 0 {
		t.Errorf("nil hosts read back as %#v, %v; want []string{}", got.Hosts, err)
	}
}

func TestSecretConflict(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	secs := seedSecrets(t, s)
	dup := secs[1]
	dup.Sealed, dup.Hosts = []byte("other"), []string{"other.example.com"}
	if err := s.CreateSecret(ctx, dup); !errors.Is(err, ErrConflict) {
		t.Errorf("create existing (tenant, name): %v, want ErrConflict", err)
	}
	// The existing secret is not overwritten.
	got, err := s.GetSecret(ctx, secs[1].TenantID, secs[1].Name)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(secs[1], got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestSecretNotFound(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	secs := seedSecrets(t, s)
	openai := secs[0] // ten_1's only
	wrongTenant := openai
	wrongTenant.TenantID = "ten_2"
	tests := []struct {
		name string
		call func() error
	}{
		{"GetSecret", func() error { _, err := s.GetSecret(ctx, "ten_1", "NOPE"); return err }},
		{"GetSecret other tenant's name", func() error { _, err := s.GetSecret(ctx, "ten_2", openai.Name); return err }},
		{"UpdateSecret", func() error { return s.UpdateSecret(ctx, Secret{TenantID: "ten_1", Name: "NOPE"}) }},
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
		if err := tt.call(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tt.name, err)
		}
	}
	// Deleting one tenant's secret leaves the same name in another.
	if err := s.DeleteSecret(ctx, "ten_1", secs[1].Name); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListSecrets(ctx, "ten_2")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Secret{secs[2]}, got); d != "" {
		t.Errorf("ten_2 after ten_1's deletes (-want +got):\n%s", d)
	}
	if left, err := s.ListSecrets(ctx, "ten_1"); err != nil || len(left) != 0 {
		t.Errorf("ten_1 after deleting both: %v, %v", left, err)
	}
}

func TestSandboxSecretsField(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	_, _, _, sb := seed(t, s)
	if got, err := s.GetSandbox(ctx, sb.ID); err != nil || got.Secrets != "" {
		t.Fatalf("sandbox without secrets: %q, %v", got.Secrets, err)
	}
	sb.Secrets = `{"GITHUB_TOKEN":"airlock-ph-0123456789abcdef0123456789abcdef01234567"}`
	if err := s.UpdateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	withSecrets := sb
	withSecrets.ID = "sb_2"
	if err := s.CreateSandbox(ctx, withSecrets); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Sandbox{sb, withSecrets} {
		got, err := s.GetSandbox(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: -want +got:\n%s", want.ID, d)
		}
	}
	list, err := s.ListSandboxes(ctx, SandboxFilter{TenantID: sb.TenantID})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Sandbox{sb, withSecrets}, list); d != "" {
		t.Errorf("ListSandboxes -want +got:\n%s", d)
	}
}

// TestSecretsReopen: secrets and a sandbox's bindings survive a daemon
// restart.
func TestSecretsReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secs := seedSecrets(t, s)
	_, _, _, sb := fixture()
	sb.Secrets = `{"OPENAI_API_KEY":"airlock-ph-00000000000000000000000000000000000000aa"}`
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	ten1, err1 := s.ListSecrets(ctx, "ten_1")
	ten2, err2 := s.ListSecrets(ctx, "ten_2")
	gotSB, err3 := s.GetSandbox(ctx, sb.ID)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	want := []any{[]Secret{secs[1], secs[0]}, []Secret{secs[2]}, sb}
	if d := cmp.Diff(want, []any{ten1, ten2, gotSB}); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// TestMigrateSecretsFromVersion3 opens a database last written by a binary
// without secrets (schema version 3): its sandboxes read back with no
// secrets bound, and secrets can be stored.
func TestMigrateSecretsFromVersion3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	qs := append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`}, migrations[:3]...)
	qs = append(qs,
		`INSERT INTO schema_version (version) VALUES (3)`,
		`INSERT INTO sandboxes (id, tenant_id, state, reason, template, cpus, memory_mb, pids, disk_mb, workdir)
			VALUES ('sb_old', 'ten_1', 'running', '', 'base', 1, 256, 64, 512, '/')`)
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	defer s.Close()
	got, err := s.GetSandbox(ctx, "sb_old")
	if err != nil || got.Secrets != "" {
		t.Errorf("old sandbox: Secrets %q, %v", got.Secrets, err)
	}
	if err := s.CreateSecret(ctx, secretFixture()[0]); err != nil {
		t.Errorf("create secret after migrating: %v", err)
	}
}
