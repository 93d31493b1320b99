package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/sqlite"
	"github.com/airlockhq/airlock/internal/store/storetest"
)

// TestConformance runs the suite every store passes against SQLite.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(*testing.T) store.Store) {
		path := filepath.Join(t.TempDir(), "airlock.db")
		open := func(t *testing.T) store.Store {
			t.Helper()
			s, err := sqlite.Open(path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
		return open(t), open
	})
}
