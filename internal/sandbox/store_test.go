package sandbox_test

import (
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/store"
)

// newStore is the real SQLite store in a temporary directory: the tests
// check the Service against the store the daemon uses, not a look-alike.
func newStore(t testing.TB) *store.SQLite {
	t.Helper()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
