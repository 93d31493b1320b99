// Package postgres is the Store for a control plane of several replicas
// sharing one PostgreSQL database. It owns that database's schema and
// the transactions that keep its invariants (event IDs committed in
// order, audit chains and their heads, storage counts) across processes.
// It must never keep a copy of a record in memory, because another
// replica may change it at any moment, and never report a write as done
// before it has committed. Like the SQLite store it sees only hashes of
// credentials and sealed secrets, and decides no policy.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/store"
)

// Store is a store.Store and nodes.Store on PostgreSQL, safe for
// concurrent use by many goroutines and many processes.
type Store struct {
	pool *pgxpool.Pool
	// conn configures Listen's own connection, which lives outside the
	// pool: a LISTEN is bound to one session.
	conn *pgx.ConnConfig
}

var (
	_ store.Store = (*Store)(nil)
	_ nodes.Store = (*Store)(nil)
)

// Open connects to the database at url (a postgres:// URL or DSN) and
// brings its schema up to date. The pool reconnects by itself after the
// server restarts: a call made while it is down fails with its error.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors never repeat the password.
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s := &Store{pool: pool, conn: cfg.ConnConfig}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// Close closes the pool. Nothing is pending: every write went to the
// database before it returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// exec runs one statement and returns the rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

// tx runs fn in one transaction and commits it. A failed commit is
// returned: the write did not happen.
func (s *Store) tx(ctx context.Context, what string, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, mapErr(err))
	}
	return nil
}

// Keys of the transaction-scoped advisory locks that serialize writers
// across processes. An appender holds its lock until it commits, so IDs
// drawn from a sequence become visible in the order they were drawn.
const (
	lockMigrate      = 0x61697201 // "air" 1
	lockTenantEvents = 0x61697202
	lockNetEvents    = 0x61697203
)

// lock takes the advisory lock key for the rest of tx.
func lock(ctx context.Context, tx pgx.Tx, key int64) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
	return err
}

// lockTask serializes writers of one task's events and artifacts. Two
// tasks whose ids hash alike only wait for each other.
func lockTask(ctx context.Context, tx pgx.Tx, taskID string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('airlock.task:' || $1, 0))`, taskID)
	return err
}

// mapErr turns constraint violations into store's sentinel errors and an
// empty single-row result into ErrNotFound.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	case "23503": // foreign_key_violation: what the row refers to is gone
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	return err
}

// limit is a LIMIT argument as SQLite reads one: negative is no limit.
func limit(n int) any {
	if n < 0 {
		return nil
	}
	return n
}

// scanAll reads every row with scan and closes rows; no rows is nil, as
// the SQLite store returns it.
func scanAll[T any](rows pgx.Rows, scan func(store.Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// query runs a query and scans every row.
func query[T any](ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args []any, scan func(store.Scanner) (T, error)) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scan)
}
