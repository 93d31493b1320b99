package store_test

import (
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/storetest"
)

// TestConformance runs the suite every store passes against SQLite.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(*testing.T) store.Store) {
		path := filepath.Join(t.TempDir(), "airlock.db")
		open := func(t *testing.T) store.Store {
			t.Helper()
			s, err := store.OpenSQLite(path)
			if err != nil {
				t.Fatalf("OpenSQLite: %v", err)
			}
			return s
		}
		return open(t), open
	})
}
