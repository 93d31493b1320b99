package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// countConn counts a sandbox's bytes on its connection to the proxy: reads
// are bytes up (from the sandbox), writes bytes down.
type countConn struct {
	net.Conn
	s        *Sandbox
	up, down atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.up.Add(int64(n))
	c.s.up.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.down.Add(int64(n))
	c.s.down.Add(int64(n))
	return n, err
}

// mark returns the counts now, to measure one request or tunnel.
func (c *countConn) mark() (up, down int64) { return c.up.Load(), c.down.Load() }

// splice copies both ways between the sandbox's connection (read through
// r, which may hold bytes already buffered) and upstream until both
// directions end, either side fails, or the pair is idle for idle.
func splice(client net.Conn, r io.Reader, upstream net.Conn, idle time.Duration) {
	spliceGated(client, r, upstream, idle, nil)
}

// spliceGated is splice whose client-to-upstream direction starts only once
// gate (if set) agrees; the other direction flows at once. If gate refuses,
// both connections are closed.
func spliceGated(client net.Conn, r io.Reader, upstream net.Conn, idle time.Duration, gate func() bool) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	half := func(dst, srcConn net.Conn, src io.Reader) {
		defer func() { done <- struct{}{} }()
		err := copyIdle(dst, srcConn, src, idle, &last)
		if err == nil {
			// EOF: pass the half-close on, the other way may go on.
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
		}
		client.Close()
		upstream.Close()
	}
	go func() {
		if gate != nil && !gate() {
			client.Close()
			upstream.Close()
			done <- struct{}{}
			return
		}
		half(upstream, client, r)
	}()
	go half(client, upstream, upstream)
	<-done
	<-done
	client.Close()
	upstream.Close()
}

// copyIdle copies src to dst; nil at EOF. A read times out only when
// neither direction moved for idle (last is shared by both).
func copyIdle(dst, srcConn net.Conn, src io.Reader, idle time.Duration, last *atomic.Int64) error {
	buf := make([]byte, 64<<10)
	for {
		srcConn.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, last.Load())) < idle:
			// The other direction is busy: the pair is not idle.
		default:
			return err
		}
	}
}

// writeCloser unwraps a countConn for CloseWrite.
func (c *countConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
