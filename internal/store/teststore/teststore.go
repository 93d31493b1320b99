// Package teststore opens the store a package's tests run on: SQLite by
// default (as serve's), or PostgreSQL when $AIRLOCK_TEST_STORE is
// postgres, on a database of its own on the suite's server, so the
// store-backed packages' suites run on both. It is imported only by tests
// and must never be imported by the daemon; it never leaves a database
// behind on the server (Main drops the package's template).
package teststore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/postgres"
	"github.com/airlockhq/airlock/internal/store/sqlite"
	"github.com/airlockhq/airlock/internal/testenv"
)

// Env picks the store: "postgres", or unset for SQLite.
const Env = "AIRLOCK_TEST_STORE"

// onPostgres reports whether the tests run on PostgreSQL.
func onPostgres() bool { return os.Getenv(Env) == "postgres" }

// Open opens an empty store of t's own, closed (and on PostgreSQL its
// database dropped) when t ends.
func Open(t testing.TB) store.Store {
	t.Helper()
	s, _ := OpenReopen(t)
	return s
}

// OpenReopen is Open with reopen, which opens the same database again as a
// restarted daemon would (after the test closed the store it holds). Every
// store either returns is closed when t ends.
func OpenReopen(t testing.TB) (store.Store, func(t testing.TB) store.Store) {
	t.Helper()
	var open func() (store.Store, error)
	if onPostgres() {
		u, err := newDatabase(t)
		if err != nil {
			t.Fatalf("test store: %v", err)
		}
		open = func() (store.Store, error) { return openPostgres(u) }
	} else {
		path := filepath.Join(t.TempDir(), "airlock.db")
		open = func() (store.Store, error) { s, err := sqlite.Open(path); return s, err }
	}
	reopen := func(t testing.TB) store.Store {
		t.Helper()
		s, err := open()
		if err != nil {
			t.Fatalf("test store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return reopen(t), reopen
}

// OpenShared opens the store of a whole test binary (TestMain has no t):
// name goes into its temporary dir or database's name. drop closes the
// store and removes it.
func OpenShared(name string) (s store.Store, drop func() error, err error) {
	if onPostgres() {
		base, err := baseURL()
		if err != nil {
			return nil, nil, err
		}
		db, u, err := testenv.CreateDatabase(base, "p_"+name, "")
		if err != nil {
			return nil, nil, err
		}
		s, err := openPostgres(u)
		if err != nil {
			testenv.DropDatabase(base, db)
			return nil, nil, err
		}
		return s, func() error { return errors.Join(s.Close(), testenv.DropDatabase(base, db)) }, nil
	}
	dir, err := os.MkdirTemp("", "airlock-"+name+"-test-db-")
	if err != nil {
		return nil, nil, fmt.Errorf("test store: %w", err)
	}
	sq, err := sqlite.Open(filepath.Join(dir, "airlock.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("test store: %w", err)
	}
	return sq, func() error { err := sq.Close(); os.RemoveAll(dir); return err }, nil
}

// Main runs a package's tests (its TestMain calls it), then drops the
// template database Open made on PostgreSQL, and exits.
func Main(m *testing.M) {
	code := m.Run()
	if err := Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// Cleanup drops the template database, if Open made one. Main calls it; a
// TestMain of its own calls it after m.Run.
func Cleanup() error {
	tpl.mu.Lock()
	defer tpl.mu.Unlock()
	if tpl.name == "" {
		return nil
	}
	err := testenv.DropDatabase(tpl.base, tpl.name)
	tpl.name = ""
	return err
}

// tpl is the binary's template database: an empty store, migrated once,
// that each test's database is copied from (a copy takes a fraction of the
// time migrating an empty database does).
var tpl struct {
	mu         sync.Mutex
	base, name string
}

// newDatabase makes t's database, a copy of the template, dropped when t
// ends, and returns its URL.
func newDatabase(t testing.TB) (string, error) {
	name, base, err := template()
	if err != nil {
		return "", err
	}
	db, u, err := testenv.CreateDatabase(base, "t", name)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := testenv.DropDatabase(base, db); err != nil {
			t.Errorf("drop test database %s: %v", db, err)
		}
	})
	return u, nil
}

// template returns the template database's name, made on first use.
func template() (name, base string, err error) {
	tpl.mu.Lock()
	defer tpl.mu.Unlock()
	if tpl.name != "" {
		return tpl.name, tpl.base, nil
	}
	if base, err = baseURL(); err != nil {
		return "", "", err
	}
	name, u, err := testenv.CreateDatabase(base, "tpl", "")
	if err != nil {
		return "", "", err
	}
	s, err := openPostgres(u)
	if err == nil {
		s.Close()
		// No session may be connected to a template while it is copied:
		// this keeps out everyone, autovacuum's workers included (they
		// visit such a database only against wraparound).
		err = testenv.PostgresExec(base, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS false")
	}
	if err != nil {
		testenv.DropDatabase(base, name)
		return "", "", err
	}
	tpl.base, tpl.name = base, name
	return name, base, nil
}

func baseURL() (string, error) {
	base := os.Getenv(testenv.DatabaseURLEnv)
	if base == "" {
		return "", fmt.Errorf("%s=postgres needs $%s (gotest starts a server)", Env, testenv.DatabaseURLEnv)
	}
	return base, nil
}

func openPostgres(u string) (store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("test store: %w", err)
	}
	return s, nil
}
