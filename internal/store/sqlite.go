package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the embedded Store: one database file, safe for concurrent use
// by one process.
type SQLite struct {
	db *sql.DB
	// SQLite admits one writer at a time. busy_timeout alone keeps
	// concurrent writers from failing, but they wait by sleep-polling the
	// lock; queueing this process's writers on a mutex hands the lock over
	// at once and leaves busy_timeout for other processes (airlock CLI,
	// backups). Transactions BEGIN IMMEDIATE (_txlock) so none upgrades a
	// stale read snapshot to a write, which fails with SQLITE_BUSY at once.
	wmu sync.Mutex
}

var _ Store = (*SQLite)(nil)

// OpenSQLite opens or creates the database at path, with mode 0600 when it
// creates it, and brings its schema up to date.
func OpenSQLite(path string) (*SQLite, error) {
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
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
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

	s := &SQLite{db: db}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// exec runs one write statement and returns the rows it changed.
func (s *SQLite) exec(ctx context.Context, query string, args ...any) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	return res.RowsAffected()
}

// mapErr turns constraint violations into the package's sentinel errors.
func mapErr(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return fmt.Errorf("%w: %v", ErrConflict, err)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		// The only foreign key is keys.tenant_id: the tenant is missing.
		return fmt.Errorf("tenant %w: %v", ErrNotFound, err)
	}
	return err
}

// Times are stored as UTC unix nanoseconds; the zero time as NULL, so it
// round-trips (its UnixNano is out of range).
func toNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
