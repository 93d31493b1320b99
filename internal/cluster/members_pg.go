package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGMembers keeps the members in the table cluster_members of a
// PostgreSQL database, on the database's clock (now()): the replicas'
// own clocks never compare.
type PGMembers struct {
	url  string
	opts MembersOptions

	mu   sync.Mutex
	conn *pgx.Conn // List's; made again after an error
}

const membersTable = `CREATE TABLE IF NOT EXISTS cluster_members (
	id         text PRIMARY KEY,
	url        text NOT NULL,
	renewed_at timestamptz NOT NULL
)`

// forgetAfter is how long a member that never took itself out stays in
// the table.
const forgetAfter = time.Hour

// NewPGMembers keeps members in the database at databaseURL.
func NewPGMembers(databaseURL string, opts MembersOptions) (*PGMembers, error) {
	opts.defaults()
	if _, err := pgx.ParseConfig(databaseURL); err != nil {
		return nil, fmt.Errorf("postgres members: database url: %w", err)
	}
	return &PGMembers{url: databaseURL, opts: opts}, nil
}

// Join renews self every RenewEvery on a session of its own until ctx
// ends, then deletes it.
func (m *PGMembers) Join(ctx context.Context, self Member) error {
	if err := checkMemberID(self.ID); err != nil {
		return err
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			lctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
			defer cancel()
			if _, err := conn.Exec(lctx, "DELETE FROM cluster_members WHERE id = $1", self.ID); err != nil {
				m.opts.Logger.Warn("leave cluster members", "id", self.ID, "err", err)
			}
			closePG(conn)
		}
	}()
	renewLoop(ctx, m.opts.RenewEvery, m.opts.Logger, "cluster member "+self.ID, func(ctx context.Context) error {
		if conn == nil {
			c, err := m.connect(ctx)
			if err != nil {
				return err
			}
			conn = c
		}
		err := m.renew(ctx, conn, self)
		if err != nil {
			closePG(conn)
			conn = nil
		}
		return err
	})
	return nil
}

func (m *PGMembers) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := connectPG(ctx, m.url, "airlock members")
	if err != nil {
		return nil, err
	}
	if err := ensureTable(ctx, conn, membersTable); err != nil {
		closePG(conn)
		return nil, fmt.Errorf("cluster_members: %w", err)
	}
	return conn, nil
}

func (m *PGMembers) renew(ctx context.Context, conn *pgx.Conn, self Member) error {
	if _, err := conn.Exec(ctx, `INSERT INTO cluster_members (id, url, renewed_at) VALUES ($1, $2, now())
		ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, renewed_at = EXCLUDED.renewed_at`, self.ID, self.URL); err != nil {
		return fmt.Errorf("renew member %s: %w", self.ID, err)
	}
	// Members that died without leaving would pile up.
	_, err := conn.Exec(ctx, "DELETE FROM cluster_members WHERE renewed_at < now() - make_interval(secs => $1)", forgetAfter.Seconds())
	return err
}

// List returns the members renewed within Duration, by the database's
// clock.
func (m *PGMembers) List(ctx context.Context) ([]Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		c, err := m.connect(ctx)
		if err != nil {
			return nil, err
		}
		m.conn = c
	}
	rows, err := m.conn.Query(ctx, "SELECT id, url, renewed_at FROM cluster_members WHERE renewed_at > now() - make_interval(secs => $1) ORDER BY id", m.opts.Duration.Seconds())
	var list []Member
	if err == nil {
		list, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Member, error) {
			var mb Member
			err := r.Scan(&mb.ID, &mb.URL, &mb.RenewedAt)
			return mb, err
		})
	}
	if err != nil {
		closePG(m.conn)
		m.conn = nil
		return nil, fmt.Errorf("list cluster members: %w", err)
	}
	return list, nil
}

// Close ends List's session.
func (m *PGMembers) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		closePG(m.conn)
		m.conn = nil
	}
}
