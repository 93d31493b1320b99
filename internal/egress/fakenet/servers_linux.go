package fakenet

import (
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/netns"
)

// servers owns every listener and connection the fake internet serves.
// Connections are tracked so that stop can cut them all, including those an
// HTTP handler hijacked, which http.Server.Close leaves open.
type servers struct {
	ns   *os.File
	hits map[string]*atomic.Int64 // by "ip:port"; written only before serving

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{}
	closers []io.Closer

	wg sync.WaitGroup // accept loops and the connections they serve

	seenMu sync.Mutex
	seen   []Seen

	routesMu sync.RWMutex
	routes   map[string]http.Handler // path prefix -> handler (Net.Handle)
}

// Seen is one HTTP request a fake server received, as it arrived.
type Seen struct {
	Name   string // the fake host's greeting name
	Method string
	Path   string
	Host   string
	Header http.Header
	Body   []byte
}

func (s *servers) record(r Seen) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	s.seen = append(s.seen, r)
}

func newServers(ns *os.File) *servers {
	return &servers{ns: ns, hits: map[string]*atomic.Int64{}, conns: map[net.Conn]struct{}{}}
}

// quiet drops http.Server's log lines (TLS handshakes a test's client
// aborted on purpose, for instance): what matters is what the client saw.
var quiet = log.New(io.Discard, "", 0)

// serveTarget starts HTTP on :80 and :8080, HTTPS on :443 and echo on :7
// for one fake host.
func (s *servers) serveTarget(t target, cert tls.Certificate) error {
	h := s.routed(handler(t.names[0], s.record))
	for _, port := range []int{PortHTTP, PortAltHTTP} {
		l, err := s.listen(t.ip, port)
		if err != nil {
			return err
		}
		s.serveHTTP(l, h)
	}
	l, err := s.listen(t.ip, PortHTTPS)
	if err != nil {
		return err
	}
	s.serveHTTP(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}}), h)
	l, err = s.listen(t.ip, PortEcho)
	if err != nil {
		return err
	}
	s.accept(l, func(c net.Conn) { io.Copy(c, c) })
	return nil
}

// routed sends requests under a path prefix given to Net.Handle to its
// handler (the longest prefix wins), and the rest to h.
func (s *servers) routed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.routesMu.RLock()
		var best string
		for p := range s.routes {
			if strings.HasPrefix(r.URL.Path, p) && len(p) > len(best) {
				best = p
			}
		}
		route := s.routes[best]
		s.routesMu.RUnlock()
		if route != nil {
			route.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveDNS starts d on UDP and TCP port 53 of DNSIP.
func (s *servers) serveDNS(d *dnsServer) error {
	addr := net.JoinHostPort(DNSIP, "53")
	pc, err := netns.ListenPacket(s.ns, "udp4", addr)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, pc)
	l, err := s.listen(DNSIP, 53)
	if err != nil {
		return err
	}
	hits := s.hits[addr] // UDP datagrams and TCP connections both count
	s.wg.Go(func() { d.serveUDP(pc, func() { hits.Add(1) }) })
	s.accept(l, d.serveTCP)
	return nil
}

// listen opens a counted, tracked TCP listener on ip:port inside the
// namespace.
func (s *servers) listen(ip string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	l, err := netns.Listen(s.ns, "tcp4", addr)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, l)
	hits := new(atomic.Int64)
	s.hits[addr] = hits
	return &trackedListener{Listener: l, s: s, hits: hits}, nil
}

func (s *servers) serveHTTP(l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ErrorLog: quiet}
	s.closers = append(s.closers, srv)
	s.wg.Go(func() { srv.Serve(l) })
}

// accept runs serve on every connection l accepts, until l is closed.
func (s *servers) accept(l net.Listener, serve func(net.Conn)) {
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
}

// stop closes every listener and connection and waits for the accept loops
// and connection goroutines (not http.Server's own) to end.
func (s *servers) stop() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	var errs []error
	for _, c := range s.closers {
		if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range conns {
		c.Close()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

type trackedListener struct {
	net.Listener
	s    *servers
	hits *atomic.Int64
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.hits.Add(1)
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.s.conns[tc] = struct{}{}
	return tc, nil
}

type trackedConn struct {
	net.Conn
	s *servers
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// handler answers every request with 200 "hello from <name>", echoing the
// request's headers back as X-Seen-<Header> (and Host as X-Seen-Host) so a
// test can see what a proxy forwarded, and records it. On /echo the body
// also repeats every request header ("Name: value" lines) and the request
// body, as a server that reflects what it is sent would.
func handler(name string, record func(Seen)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		record(Seen{Name: name, Method: r.Method, Path: r.URL.Path, Host: r.Host, Header: r.Header.Clone(), Body: body})
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			upgrade(w, r)
			return
		}
		for k, v := range r.Header {
			w.Header()["X-Seen-"+k] = v
		}
		w.Header().Set("X-Seen-Host", r.Host)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "hello from %s\n", name)
		if r.URL.Path == "/echo" {
			for k, vs := range r.Header {
				for _, v := range vs {
					fmt.Fprintf(w, "%s: %s\n", k, v)
				}
			}
			w.Write(body)
		}
	})
}

// upgrade answers a WebSocket handshake with 101 and then echoes raw bytes
// (not frames): enough to prove a proxy let an upgraded connection through
// in both directions.
func upgrade(w http.ResponseWriter, r *http.Request) {
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer c.Close()
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	if rw.Flush() != nil {
		return
	}
	io.Copy(c, rw) // rw first: it may hold bytes sent right after the request
}
