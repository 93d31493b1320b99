// Package sqlite is the embedded store.Store: one SQLite database file
// (modernc.org/sqlite, in WAL mode) for one daemon. It owns that file's
// schema and migrations, its write lock, and a write-through cache of
// sandbox records with the updates it writes behind, which assume no
// other process writes the database (as the data dir assumes one
// daemon). Like the PostgreSQL store it sees only hashes of credentials
// and sealed secrets, and decides no policy: quotas and ownership are
// checked by its callers.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/airlockhq/airlock/internal/store"
)

// Store is the embedded store.Store: one database file, safe for
// concurrent use by one process.
type Store struct {
	db *sql.DB
	// SQLite admits one writer at a time. busy_timeout alone keeps
	// concurrent writers from failing, but they wait by sleep-polling the
	// lock; queueing this process's writers on a mutex hands the lock over
	// at once and leaves busy_timeout for other processes (airlock CLI,
	// backups). Transactions BEGIN IMMEDIATE (_txlock) so none upgrades a
	// stale read snapshot to a write, which fails with SQLITE_BUSY at once.
	wmu sync.Mutex
	// stmts holds a prepared statement per fixed query text: preparing
	// (parsing and planning) is over half the cost of a point query.
	stmts sync.Map // string -> *sql.Stmt

	// sandboxes caches sandbox records (sbcache.go); deferred
	// holds updates on their way to the database (sbdefer.go).
	sandboxes sandboxCache
	deferred  deferredSandboxes
	// storage mirrors each tenant's stored bytes (storage.go).
	storage storageCounts

	writes    atomic.Int64 // bumped by every write; the checkpointer polls it
	wal       string       // the WAL file's path
	tune      tuning
	stopCkpt  chan struct{}
	ckptDone  chan struct{}
	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// busyTimeout is how long a statement waits for another process's lock.
const busyTimeout = 5 * time.Second

// Open opens or creates the database at path, with mode 0600 when it
// creates it, and brings its schema up to date.
func Open(path string) (*Store, error) { return openTuned(path, defaultTuning) }

func openTuned(path string, tune tuning) (*Store, error) {
	// Create the file ourselves: SQLite would create it with 0644 less the
	// umask, and it holds key hashes. Its -wal and -shm files copy this mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}

	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Checkpoints (which fsync the database) run in the background, not in
	// whichever write happens to cross the WAL's size threshold.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Opaque: path, RawQuery: q.Encode()}).String()

	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Readers run in parallel under WAL; writers take s.wmu.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(0)

	s := &Store{db: db, wal: path + "-wal", tune: tune, stopCkpt: make(chan struct{}), ckptDone: make(chan struct{})}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.storage.load(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go s.checkpointLoop()
	return s, nil
}

// Close checkpoints the WAL into the database and closes it.
func (s *Store) Close() error {
	s.closeDeferred()
	s.closeOnce.Do(func() { close(s.stopCkpt) })
	<-s.ckptDone
	s.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`)
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	return s.db.Close()
}

// prepared returns the prepared statement for query, a fixed text (never
// one built from input, or the cache would grow without bound).
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// writeTx runs fn in one write transaction, under the write lock, and
// commits it. Errors of beginning and committing say what; fn's own are
// returned as they are.
func (s *Store) writeTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	return s.writeTxThen(ctx, what, fn, nil)
}

// writeTxThen is writeTx that calls then, if not nil, once the
// transaction has committed, still under the write lock.
func (s *Store) writeTxThen(ctx context.Context, what string, fn func(tx *sql.Tx) error, then func()) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	s.writes.Add(1)
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if then != nil {
		then()
	}
	return nil
}

// exec runs one write statement and returns the rows it changed. Like
// queryRow, it runs without the caller's cancellation (see pointCtx).
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return s.execThen(ctx, nil, query, args...)
}

// execThen is exec that calls then, if not nil, with the outcome while it
// still holds the write lock: what then records follows the write order.
func (s *Store) execThen(ctx context.Context, then func(n int64, err error), query string, args ...any) (int64, error) {
	ctx = pointCtx(ctx)
	st, err := s.prepared(ctx, query)
	if err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res, err := st.ExecContext(ctx, args...)
	s.writes.Add(1)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	err = mapErr(err)
	if then != nil {
		then(n, err)
	}
	return n, err
}

// queryRow runs a fixed single-row query, without the caller's
// cancellation (see pointCtx).
func (s *Store) queryRow(ctx context.Context, query string, args ...any) store.Scanner {
	ctx = pointCtx(ctx)
	st, err := s.prepared(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// pointCtx drops ctx's cancellation for a statement on a key or an
// index, which takes microseconds: watching a cancellable context costs the
// driver a goroutine per statement and database/sql another per query,
// each started and woken, which on a busy host costs more than the
// statement itself. Its values stay. A query that may scan (query) keeps
// the caller's context.
func pointCtx(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// query runs a fixed query.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// mapErr turns constraint violations into the package's sentinel errors.
func mapErr(err error) error {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		// The only foreign key is keys.tenant_id: the tenant is missing.
		return fmt.Errorf("tenant %w: %v", store.ErrNotFound, err)
	}
	return err
}

// listPage runs the SELECT of cols from table with the conditions in where
// (joined by AND) and their args, ordered by id, at most limit rows (0: no
// limit), scanned by scan; what names the list in errors.
func listPage[T any](ctx context.Context, s *Store, what, cols, table string, where []string, args []any, limit int, scan func(store.Scanner) (T, error)) ([]T, error) {
	q := `SELECT ` + cols + ` FROM ` + table
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY id`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	out, err := scanAll(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return out, nil
}
