package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGElector elects a leader with a session-level PostgreSQL advisory lock
// on key, held by a connection of its own: the lock lasts exactly as long
// as the leader's session. A follower tries to take it every RetryPeriod;
// the leader pings its session every RetryPeriod and steps down at the
// first failure (the lock may be gone with the session), then connects
// again as a follower.
//
// The leader writes its identity to cluster_leader, so followers can
// say who leads; a row whose session holds the lock no more is not
// taken for a leader.
type PGElector struct {
	*leadership
	url      string
	key      int64
	identity string
	opts     ElectorOptions
}

const leaderTable = `CREATE TABLE IF NOT EXISTS cluster_leader (
	key      bigint PRIMARY KEY,
	identity text NOT NULL,
	since    timestamptz NOT NULL,
	pid      integer NOT NULL
)`

// NewPGElector makes an elector on the advisory lock key of the database
// at databaseURL, for this process as identity.
func NewPGElector(databaseURL string, key int64, identity string, opts ElectorOptions) (*PGElector, error) {
	opts.defaults()
	if identity == "" {
		return nil, errors.New("postgres elector: identity is empty")
	}
	if _, err := pgx.ParseConfig(databaseURL); err != nil {
		return nil, fmt.Errorf("postgres elector: database url: %w", err)
	}
	return &PGElector{leadership: newLeadership(), url: databaseURL, key: key, identity: identity, opts: opts}, nil
}

// Run campaigns until ctx ends, then closes its session (releasing the
// lock, if held) and Changes.
func (e *PGElector) Run(ctx context.Context) {
	defer e.close()
	for ctx.Err() == nil {
		err := e.session(ctx)
		e.set(false)
		// Who leads is unknown until the next session reads it.
		e.setLeader("")
		if ctx.Err() != nil {
			return
		}
		e.opts.Logger.Warn("postgres elector: session ended", "key", e.key, "identity", e.identity, "err", err)
		Sleep(ctx, e.opts.RetryPeriod)
	}
}

// session runs one database session: campaign, lead, and return on the
// session's first error (or ctx's end).
func (e *PGElector) session(ctx context.Context) error {
	conn, err := connectPG(ctx, e.url, "airlock elector "+e.identity)
	if err != nil {
		return err
	}
	defer closePG(conn)
	if err := ensureTable(ctx, conn, leaderTable); err != nil {
		return fmt.Errorf("cluster_leader: %w", err)
	}
	for {
		var got bool
		if err := e.query(ctx, conn, "SELECT pg_try_advisory_lock($1)", e.key).Scan(&got); err != nil {
			return err
		}
		if got {
			return e.lead(ctx, conn)
		}
		e.setLeader(e.current(ctx, conn))
		if !Sleep(ctx, e.opts.RetryPeriod) {
			return ctx.Err()
		}
	}
}

// lead holds the lock until the session fails or ctx ends.
func (e *PGElector) lead(ctx context.Context, conn *pgx.Conn) error {
	if _, err := e.exec(ctx, conn, `INSERT INTO cluster_leader (key, identity, since, pid) VALUES ($1, $2, now(), pg_backend_pid())
		ON CONFLICT (key) DO UPDATE SET identity = EXCLUDED.identity, since = EXCLUDED.since, pid = EXCLUDED.pid`, e.key, e.identity); err != nil {
		return fmt.Errorf("record leader: %w", err)
	}
	e.setLeader(e.identity)
	e.opts.Logger.Info("leading", "key", e.key, "identity", e.identity)
	e.set(true)
	defer e.opts.Logger.Info("stopped leading", "key", e.key, "identity", e.identity)
	for {
		if !Sleep(ctx, e.opts.RetryPeriod) {
			// A clean stop: step down first, then let the lock go with
			// the session (closed by the caller).
			e.set(false)
			return ctx.Err()
		}
		pctx, cancel := context.WithTimeout(ctx, e.opts.RetryPeriod)
		err := conn.Ping(pctx)
		cancel()
		if err != nil {
			e.set(false)
			return fmt.Errorf("leader's session: %w", err)
		}
	}
}

// current is the leader as cluster_leader says, when its session still
// holds the lock; "" otherwise.
func (e *PGElector) current(ctx context.Context, conn *pgx.Conn) string {
	var id string
	err := e.query(ctx, conn, `SELECT l.identity FROM cluster_leader l WHERE l.key = $1 AND EXISTS (
		SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted AND k.pid = l.pid
			AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND k.classid = (($1::bigint >> 32) & 4294967295)::oid AND k.objid = ($1::bigint & 4294967295)::oid AND k.objsubid = 1)`, e.key).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		e.opts.Logger.Warn("postgres elector: read leader", "key", e.key, "err", err)
	}
	return id
}

// query and exec bound each statement by RetryPeriod: a session that
// does not answer in that time is taken for dead.
func (e *PGElector) query(ctx context.Context, conn *pgx.Conn, sql string, args ...any) pgx.Row {
	qctx, cancel := context.WithTimeout(ctx, e.opts.RetryPeriod)
	return cancelRow{conn.QueryRow(qctx, sql, args...), cancel}
}

func (e *PGElector) exec(ctx context.Context, conn *pgx.Conn, sql string, args ...any) (any, error) {
	qctx, cancel := context.WithTimeout(ctx, e.opts.RetryPeriod)
	defer cancel()
	return conn.Exec(qctx, sql, args...)
}

type cancelRow struct {
	pgx.Row
	cancel context.CancelFunc
}

func (r cancelRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.Row.Scan(dest...)
}

// Sleep waits d, false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
