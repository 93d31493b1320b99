package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// A time with nanoseconds in a non-UTC zone. The store-agnostic tests are
// in storetest (run by storetest_test.go); these are SQLite's own.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600))

func fixture() (tenancy.Tenant, tenancy.Key, tenancy.Token, sandboxrec.Sandbox) {
	tn := tenancy.Tenant{ID: "ten_1", Name: "acme", MaxSandboxes: 10, MaxMemoryMB: 8192, MaxStorageMB: 512, CreatedAt: t0}
	k := tenancy.Key{ID: "key_1", TenantID: tn.ID, Name: "ci", Hash: []byte{0, 1, 2, 0xff}, Admin: true, CreatedAt: t0}
	tok := tenancy.Token{ID: "tok_1", SandboxID: "sb_1", TenantID: tn.ID, Hash: []byte("tokhash"), ExpiresAt: t0.Add(time.Hour)}
	sb := sandboxrec.Sandbox{
		ID: "sb_1", TenantID: tn.ID, State: sandboxrec.Running, Template: "python:3.12",
		CPUs: 1.5, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		Env:      map[string]string{"A": "1", "QUOTE": `"'\n`},
		Metadata: map[string]string{"job": "42", "weird.key \"x\"": "v"},
		Workdir:  "/work", CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
	}
	return tn, k, tok, sb
}

func seed(t *testing.T, s store.Store) (tenancy.Tenant, tenancy.Key, tenancy.Token, sandboxrec.Sandbox) {
	t.Helper()
	ctx := context.Background()
	tn, k, tok, sb := fixture()
	for _, err := range []error{
		s.CreateTenant(ctx, tn),
		s.CreateKey(ctx, k),
		s.CreateSandbox(ctx, sb),
		s.CreateToken(ctx, tok),
	} {
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return tn, k, tok, sb
}

// TestSchemaVersion: a reopened database records the binary's version
// and runs no migration twice. (Reopening itself is in the conformance
// suite, storetest.)
func TestSchemaVersion(t *testing.T) {
	s, path := openTest(t)
	seed(t, s)
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	var v int
	if err := s2.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != len(migrations) {
		t.Errorf("schema_version = %d, %v; want %d", v, err, len(migrations))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	s, path := openTest(t)
	if _, err := s.exec(context.Background(), `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(path); err == nil {
		s2.Close()
		t.Fatal("opened a database from a newer binary")
	}
}

func TestFileMode(t *testing.T) {
	s, path := openTest(t)
	seed(t, s)
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(p), m)
		}
	}
}

func TestPragmas(t *testing.T) {
	s, _ := openTest(t)
	want := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1", "busy_timeout": "5000"}
	got := map[string]string{}
	for p := range want {
		var v string
		if err := s.db.QueryRow(`PRAGMA ` + p).Scan(&v); err != nil {
			t.Fatal(err)
		}
		got[p] = v
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
