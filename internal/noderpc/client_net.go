package noderpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Dial connects to address inside the sandbox. As with net.Dialer, ctx
// bounds the connecting only: the connection outlives it.
func (s *sandbox) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	q := url.Values{"network": {network}, "address": {address}}
	var c *conn
	err := s.rt.setup(ctx, func(life context.Context, cancel context.CancelFunc) (err error) {
		c, err = s.rt.openConn(life, cancel, s.path("dial", q))
		return err
	}, func() { c.Close() })
	if err != nil {
		return nil, err // not a nil *conn in a non-nil net.Conn
	}
	return c, nil
}

// Listen listens on address inside the sandbox. As with net.Listen, the
// listener outlives ctx; Close ends it, and its pending Accept.
func (s *sandbox) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	q := url.Values{"network": {network}, "address": {address}}
	var l *listener
	err := s.rt.setup(ctx, func(life context.Context, cancel context.CancelFunc) error {
		d := newDuplex()
		st, err := s.rt.open(life, http.MethodPost, s.path("listen", q), d.pr)
		var head connHead
		if err == nil {
			if err = st.head(&head); err != nil {
				st.close()
			}
		}
		if err != nil {
			d.pw.Close()
			return err
		}
		l = &listener{rt: s.rt, life: context.WithoutCancel(life), cancel: cancel, d: d, st: st, addr: addr{head.Network, head.Local}}
		go l.read()
		return nil
	}, func() { l.Close() })
	if err != nil {
		return nil, err
	}
	return l, nil
}

// setup opens a call that outlives ctx, which bounds only the opening:
// open gets the call's own context and the cancel that ends it; undo
// ends what open made if ctx ended meanwhile.
func (c *Runtime) setup(ctx context.Context, open func(context.Context, context.CancelFunc) error, undo func()) error {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	err := open(life, cancel)
	if !stop() && err == nil {
		undo()
		err = fmt.Errorf("node %s: %w", c.host, ctx.Err())
	}
	if err != nil {
		cancel()
	}
	return err
}

// openConn starts a call that carries a connection: the request body is
// what is written to it, the response's data frames what is read.
func (c *Runtime) openConn(ctx context.Context, cancel context.CancelFunc, path string) (*conn, error) {
	// Pipes give the connection net.Conn's deadlines: a read or write
	// that times out leaves the stream whole, to go on after.
	upR, upW := net.Pipe()
	st, err := c.open(ctx, http.MethodPost, path, upR)
	var head connHead
	if err == nil {
		if err = st.head(&head); err != nil {
			st.close()
		}
	}
	if err != nil {
		upW.Close()
		upR.Close()
		cancel()
		return nil, err
	}
	downR, downW := net.Pipe()
	cn := &conn{in: downR, inW: downW, out: upW, upR: upR, st: st, cancel: cancel,
		sent: make(chan struct{}), done: make(chan struct{}),
		local: addr{head.Network, head.Local}, remote: addr{head.Network, head.Remote}}
	go cn.download()
	return cn, nil
}

// conn is a connection inside a sandbox, carried by one call.
type conn struct {
	in, inW   net.Conn // Read's end, and the end download fills
	out, upR  net.Conn // Write's end, and the request body's
	st        *stream
	cancel    context.CancelFunc
	sent      chan struct{} // the node has written all that was sent, and half-closed
	done      chan struct{} // download has returned
	local     addr
	remote    addr
	closed    atomic.Bool
	closeOnce sync.Once

	mu  sync.Mutex
	err error // why the call failed, once it has
}

var _ interface {
	net.Conn
	CloseWrite() error
} = (*conn)(nil)

// download copies the response's data to in until the call ends; once
// Close closed in, it reads on for the node's answer to the half-close.
func (c *conn) download() {
	defer close(c.done)
	// Once the call is over, writes fail rather than block.
	defer c.upR.Close()
	defer c.st.close()
	ended := false // the node's side of the connection has
	for {
		kind, p, err := c.st.next()
		switch {
		case err != nil && ended:
			return // the call's end, after the connection's
		case err != nil:
			c.fail(err)
			return
		case kind == frameData:
			_, _ = c.inW.Write(p) // fails only once Close closed in
		case kind == frameEnd:
			ended = true
			c.inW.Close()
		case kind == frameReply:
			select {
			case <-c.sent: // a node that answers twice
			default:
				close(c.sent)
			}
		default:
			c.fail(c.st.violation(fmt.Sprintf("frame %q in a connection", kind)))
			return
		}
	}
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	c.inW.Close()
}

// mapErr is what Read or Write report for err from the pipes.
func (c *conn) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case c.closed.Load():
		return net.ErrClosed
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe):
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return c.err
		}
	}
	return err
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.in.Read(p)
	return n, c.mapErr(err)
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.out.Write(p)
	return n, c.mapErr(err)
}

// CloseWrite half-closes the connection: the sandbox's side reads its
// end, and may go on writing.
func (c *conn) CloseWrite() error { return c.out.Close() }

// Close closes the connection as a TCP socket's Close does: what was
// written is delivered (the node says so, within closeWait) before the
// node closes its side.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.in.Close()
		c.out.Close()
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-c.sent:
		case <-c.done:
		case <-t.C:
		}
		c.cancel()
		<-c.done
	})
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}
func (c *conn) SetReadDeadline(t time.Time) error  { return c.in.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.out.SetWriteDeadline(t) }

// addr is an address inside a sandbox, as the node's runtime gave it.
type addr struct{ net, s string }

func (a addr) Network() string { return a.net }
func (a addr) String() string  { return a.s }

// listener is a listener inside a sandbox, carried by one call.
type listener struct {
	rt     *Runtime
	life   context.Context // the values connections are picked up with
	cancel context.CancelFunc
	d      *duplex
	st     *stream
	addr   addr
	closed atomic.Bool
	once   sync.Once
}

func (l *listener) read() {
	defer l.st.close()
	for {
		kind, p, err := l.st.next()
		switch {
		case err != nil:
			l.d.finish(err)
			return
		case kind == frameReply:
			l.d.reply(p)
		case kind == frameEnd:
			l.d.finish(nil)
			return
		default:
			l.d.finish(l.st.violation(fmt.Sprintf("frame %q on a listener", kind)))
			return
		}
	}
}

// Accept asks the node for the listener's next connection and picks it
// up. A connection that was gone by then (it waited past pickupWait) is
// skipped, as a connection reset before its accept would be.
func (l *listener) Accept() (net.Conn, error) {
	for {
		r, err := l.d.call(frameAccept, nil)
		switch {
		case l.closed.Load():
			return nil, fmt.Errorf("accept on %s: %w", l.addr, net.ErrClosed)
		case err != nil:
			return nil, fmt.Errorf("node %s: listener %s: %w", l.rt.host, l.addr, err)
		case r.Error != nil:
			return nil, r.Error.err()
		}
		ctx, cancel := context.WithCancel(l.life)
		c, err := l.rt.openConn(ctx, cancel, "/conns/"+url.PathEscape(r.Conn))
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Close closes the listener on the node and waits until it has (bounded
// by closeWait). Connections it accepted go on.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		l.d.pw.Close()
		waitOrAbandon(l.d.done, l.st)
		l.cancel()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }
