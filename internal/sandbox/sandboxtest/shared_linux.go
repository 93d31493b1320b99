// Package sandboxtest gives a test package one Linux runtime and one store
// to share: the base template and disk pool are set up once, and since a
// sandbox Service reclaims every runtime sandbox its store does not know,
// all the Services of a package must share its store.
package sandboxtest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// Shared is a package's runtime (made on first use, by a test that may run
// one) and store (open from the start).
type Shared struct {
	// Store is the package's store: SQLite, or PostgreSQL when
	// $AIRLOCK_TEST_STORE is postgres (teststore), so the store-backed
	// packages' tests run on both.
	Store     store.Store
	dropStore func() error

	name     string
	once     sync.Once
	rt       *linux.Runtime
	err      error
	stateDir string
}

// Open opens the store of a package; name goes into its temporary dirs.
// Call it from TestMain and Close after the tests.
func Open(name string) (*Shared, error) {
	st, drop, err := teststore.OpenShared(name)
	if err != nil {
		return nil, err
	}
	return &Shared{Store: st, dropStore: drop, name: name}, nil
}

// Runtime returns the shared runtime, made on the first call; a machine
// that cannot run sandboxes skips the test (or fails it in CI).
func (s *Shared) Runtime(t *testing.T) *linux.Runtime {
	t.Helper()
	linuxtest.Require(t)
	s.once.Do(func() {
		if s.stateDir, s.err = os.MkdirTemp("", "airlock-"+s.name+"-state-"); s.err != nil {
			return
		}
		if s.err = os.Chmod(s.stateDir, 0o711); s.err != nil {
			return
		}
		s.rt, s.err = linux.New(linux.Config{StateDir: s.stateDir, Binary: linuxtest.Init(t), DiskPoolBytes: 8 << 30})
	})
	if s.err != nil {
		t.Fatalf("runtime: %v", s.err)
	}
	return s.rt
}

// StateDir is the runtime's state dir ("" before Runtime).
func (s *Shared) StateDir() string { return s.stateDir }

// Close closes and removes the store (and teststore's template), tears
// the runtime down (sandboxes, disk pool) and removes the temporary dirs.
func (s *Shared) Close() error {
	err := s.dropStore()
	// Open made a template when a test asked for a store of its own.
	err = errors.Join(err, teststore.Cleanup())
	if s.rt != nil {
		if terr := s.rt.Teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("teardown runtime: %w", terr))
		}
	}
	if s.stateDir != "" {
		os.RemoveAll(s.stateDir)
	}
	return err
}

// Main runs a package's tests (TestMain calls it) with a Shared that set
// receives before they start and that is closed after them, then exits.
func Main(m *testing.M, name string, set func(*Shared)) {
	s, err := Open(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	set(s)
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	linuxtest.Cleanup()
	os.Exit(code)
}
