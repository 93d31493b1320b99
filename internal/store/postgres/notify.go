package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notify sends payload to every session listening on channel (pg_notify),
// this process's included, once the call's implicit transaction commits.
// Replicas use it to tell each other to drop what they cached of a record
// another one changed. PostgreSQL caps a payload at 8000 bytes.
func (s *Store) Notify(ctx context.Context, channel, payload string) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// Backoff of Listen's reconnects, and how long its connection may sit
// silent before it is pinged: a server that went away without closing
// the socket is found within listenPing.
var (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 5 * time.Second
	listenPing       = 30 * time.Second
)

// Listen calls fn with the payload of each notification sent on channel,
// one at a time, from one connection of its own (outside the pool) that
// LISTENs, until ctx is done; it then returns ctx's error. When that
// connection breaks (the server restarted, the network dropped) it
// reconnects with backoff and, once listening again, calls fn("") once:
// notifications sent meanwhile are lost, so "" means "drop everything
// cached". It does the same if the first connection cannot be made at
// once, since the caller may have cached before calling Listen. fn must
// not block for long: notifications queue in the server meanwhile.
func (s *Store) Listen(ctx context.Context, channel string, fn func(payload string)) error {
	if channel == "" {
		return errors.New("listen: no channel")
	}
	backoff := listenMinBackoff
	missed := false // whether notifications may have gone unheard
	for {
		conn, err := s.listenConn(ctx, channel)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			missed = true
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, listenMaxBackoff)
			continue
		}
		backoff = listenMinBackoff
		if missed {
			fn("")
		}
		err = receive(ctx, conn, fn)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err // the connection broke: reconnect, then report the gap
		missed = true
	}
}

// listenConn opens a connection and LISTENs on channel.
func (s *Store) listenConn(ctx context.Context, channel string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.conn.Copy())
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", channel, err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("listen %s: %w", channel, err)
	}
	return conn, nil
}

// receive hands notifications to fn until the connection fails or ctx is
// done; a connection silent for listenPing must answer a ping.
func receive(ctx context.Context, conn *pgx.Conn, fn func(string)) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			fn(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, listenPing)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
