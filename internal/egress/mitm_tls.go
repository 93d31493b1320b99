package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// systemRoots is the host's trust store, read once.
var systemRoots = sync.OnceValues(x509.SystemCertPool)

// upstreamTLS is the client side of an intercepted tunnel. The proxy, not
// the sandbox, now vouches for the upstream, so the certificate is always
// verified against the host name the CONNECT named: a sandbox (or anyone on
// the path) that could make the proxy accept a forged certificate would
// receive the value. With Config.RootCAs set, a chain is accepted if it is
// valid under the system roots or under RootCAs: crypto/tls takes a single
// pool and x509.CertPool cannot be merged, so the standard check is turned
// off (InsecureSkipVerify) only to be replaced by VerifyConnection, which
// runs on every handshake, resumed ones included.
func (p *Proxy) upstreamTLS(host string) *tls.Config {
	cfg := &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	extra := p.cfg.RootCAs
	if extra == nil {
		return cfg
	}
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyUpstream(cs.PeerCertificates, host, extra)
	}
	return cfg
}

// verifyUpstream checks that certs, as the server sent them, chain to the
// system roots or to extra and name host.
func verifyUpstream(certs []*x509.Certificate, host string, extra *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("upstream sent no certificate")
	}
	opts := x509.VerifyOptions{DNSName: host, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	var errs []error
	if sys, err := systemRoots(); err == nil {
		opts.Roots = sys
		_, err = certs[0].Verify(opts)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("system roots: %w", err))
	}
	opts.Roots = extra
	_, err := certs[0].Verify(opts)
	if err == nil {
		return nil
	}
	errs = append(errs, fmt.Errorf("extra roots: %w", err))
	return fmt.Errorf("verify upstream certificate for %s: %w", host, errors.Join(errs...))
}

// bufConn reads through r, which holds bytes already read from Conn.
type bufConn struct {
	net.Conn
	r io.Reader
}

func newBufConn(c net.Conn, br *bufio.Reader) *bufConn { return &bufConn{Conn: c, r: br} }

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite passes a half-close on, for splice.
func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// idleConn gives every read and write a deadline idle from now, so a long
// stream (a model's answer token by token) lives as long as it moves,
// and a stalled one ends.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(p)
}

func (c *idleConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// plainConn counts the decrypted bytes of an intercepted tunnel, for its
// per-request events.
type plainConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *plainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *plainConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}

func (c *plainConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
