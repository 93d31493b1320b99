package cluster

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
)

// The TCP keepalive of the sessions this package holds, both ends. The
// server drops the session of a peer that vanished without a word (its
// host gone, a partition) after about idle + interval*count, 11 s, and
// with it the session's advisory lock; the holder, which pings every
// RetryPeriod within a RetryPeriod, has stepped down well before that.
// A process that dies on a live host (kill -9, a crash) loses its
// session at once: the kernel closes its socket.
const (
	keepaliveIdle     = 5 * time.Second
	keepaliveInterval = 2 * time.Second
	keepaliveCount    = 3
	// userTimeout cuts a session whose sent data goes unacknowledged.
	userTimeout = 10 * time.Second
	dialTimeout = 5 * time.Second
)

// connectPG opens one session on the database at url, with keepalives
// set on both ends.
func connectPG(ctx context.Context, url, appName string) (*pgx.Conn, error) {
	conf, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: keepaliveIdle, Interval: keepaliveInterval, Count: keepaliveCount}}
	conf.DialFunc = d.DialContext
	if conf.ConnectTimeout == 0 {
		conf.ConnectTimeout = dialTimeout
	}
	conf.RuntimeParams["application_name"] = appName
	conf.RuntimeParams["tcp_keepalives_idle"] = fmt.Sprint(int(keepaliveIdle.Seconds()))
	conf.RuntimeParams["tcp_keepalives_interval"] = fmt.Sprint(int(keepaliveInterval.Seconds()))
	conf.RuntimeParams["tcp_keepalives_count"] = fmt.Sprint(keepaliveCount)
	conf.RuntimeParams["tcp_user_timeout"] = fmt.Sprint(userTimeout.Milliseconds())
	conn, err := pgx.ConnectConfig(ctx, conf)
	if err != nil {
		return nil, fmt.Errorf("connect to the database: %w", err)
	}
	return conn, nil
}

// schemaLock is the advisory lock taken around this package's CREATE
// TABLE IF NOT EXISTS: two sessions creating the same table at once
// would otherwise fail on pg_type's unique index.
const schemaLock = 0x61726c6b_00000001 // "arlk", 1

func ensureTable(ctx context.Context, conn *pgx.Conn, ddl string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// closePG ends a session, within a moment: a dead peer does not hold up
// the caller.
func closePG(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn.Close(ctx)
}
