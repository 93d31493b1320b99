package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

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

	s, err := Open(path)
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
