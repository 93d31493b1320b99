package sandbox

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// relistener is a listener in a sandbox that listens again when the one
// it holds fails without being closed: one on a node whose connection
// broke (the node restarted, or the control plane lost it for a while).
// A local runtime's listeners fail only when closed, so there it is a
// plain listener. It gives up when the sandbox is gone.
type relistener struct {
	listen func(ctx context.Context) (net.Listener, error)
	addr   net.Addr

	mu     sync.Mutex
	cur    net.Listener
	closed bool
	done   chan struct{}
}

// Backoff between attempts to listen again.
const (
	relistenFirst = 100 * time.Millisecond
	relistenMax   = 2 * time.Second
)

// newRelistener serves ln, and listens again with listen after it fails.
func newRelistener(ln net.Listener, listen func(ctx context.Context) (net.Listener, error)) *relistener {
	return &relistener{listen: listen, addr: ln.Addr(), cur: ln, done: make(chan struct{})}
}

// Accept returns the next connection, listening again as often as it
// takes while the sandbox lives.
func (l *relistener) Accept() (net.Conn, error) {
	wait := relistenFirst
	for {
		l.mu.Lock()
		cur, closed := l.cur, l.closed
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if cur != nil {
			c, err := cur.Accept()
			if err == nil {
				return c, nil
			}
			l.mu.Lock()
			if l.closed {
				l.mu.Unlock()
				return nil, net.ErrClosed
			}
			if l.cur == cur {
				l.cur = nil
			}
			l.mu.Unlock()
			cur.Close()
		}
		select {
		case <-l.done:
			return nil, net.ErrClosed
		case <-time.After(wait):
		}
		wait = min(2*wait, relistenMax)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ln, err := l.listen(ctx)
		cancel()
		if errors.Is(err, runtime.ErrNotFound) {
			return nil, err // the sandbox is gone
		}
		if err != nil {
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			ln.Close()
			return nil, net.ErrClosed
		}
		l.cur = ln
		l.mu.Unlock()
		wait = relistenFirst
	}
}

// Close closes the listener for good.
func (l *relistener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	if l.cur != nil {
		return l.cur.Close()
	}
	return nil
}

func (l *relistener) Addr() net.Addr { return l.addr }
