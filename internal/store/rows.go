package store

import (
	"database/sql"
	"errors"
	"time"
)

// The row codecs (ScanTenant, ScanSandbox, ... beside each record's type,
// and those below) are shared by the two implementations, SQLite in
// store/sqlite and PostgreSQL in store/postgres, whose tables hold the same
// columns in the same encodings: one decoding of a row, whichever database
// it came from. pgx scans into database/sql's Null types, and its
// ErrNoRows is database/sql's. They are for those implementations, not
// for the store's callers.

// Scanner is a row or rows positioned at a row.
type Scanner interface{ Scan(dest ...any) error }

// NotFound maps an empty single-row result to ErrNotFound.
func NotFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// ToNanos is how times are stored: UTC unix nanoseconds (timestamptz
// would keep only microseconds), the zero time as NULL so it round-trips
// (its UnixNano is out of range).
func ToNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// FromNanos reads a time ToNanos stored.
func FromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
