package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// boundTunnel is an intercepted tunnel to an upstream whose TLS server
// hands each decrypted connection to handle, for upstreams that misbehave
// in ways an http.Handler cannot.
type boundTunnel struct {
	tp    *testProxy
	srv   *tcpServer
	tc    *tls.Conn // the sandbox's TLS session with the proxy
	bound string    // the tunnel's target, host:port
}

func startBoundTunnel(t *testing.T, cfg Config, handle func(*tls.Conn)) *boundTunnel {
	t.Helper()
	cert, roots := mitmUpstreamCert(t)
	srv := startTCP(t, func(c net.Conn) {
		handle(tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}}))
	})
	bound := fmt.Sprintf("%s:%d", mitmBound, srv.port())
	cfg.DNS, cfg.RootCAs = startMitmDNS(t), roots
	tp := startProxy(t, cfg, allowlist(bound, fmt.Sprintf("127.0.0.1:%d", srv.port())))
	ca, err := NewCA("sb1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.sb.SetSecrets(ca, []Binding{{Name: "API_KEY", Placeholder: mitmPhKey, Value: mitmValKey, Hosts: []string{bound}}}); err != nil {
		t.Fatal(err)
	}
	c := tp.dial(t, tp.httpAddr)
	if resp := c.connect(t, bound); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", resp.Status)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	tc := tls.Client(c, &tls.Config{ServerName: mitmBound, RootCAs: pool})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS through the tunnel (intercepted?): %v", err)
	}
	return &boundTunnel{tp: tp, srv: srv, tc: tc, bound: bound}
}

// TestCloseCutsPendingInterceptedRequest: Close also ends a request in an
// intercepted tunnel that waits on a silent upstream. The sandbox's side
// closing does not reach that wait: the proxy's own TLS connection to the
// upstream must be cut too.
func TestCloseCutsPendingInterceptedRequest(t *testing.T) {
	got := make(chan struct{})
	bt := startBoundTunnel(t, Config{IdleTimeout: time.Hour}, func(c *tls.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			close(got)
		}
		io.Copy(io.Discard, c) // never answers
	})
	fmt.Fprintf(bt.tc, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n\r\n", bt.bound, mitmPhKey)
	select {
	case <-got:
	case <-time.After(waitFor):
		t.Fatal("the request never reached the upstream")
	}
	done := make(chan error, 1)
	go func() { done <- bt.tp.sb.Close() }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Error("Close did not return while an intercepted request waited on its upstream")
		bt.srv.close() // lets Close return
		<-done
	}
}

// TestMITMStripsConnectionNamedResponseHeaders: as for plain HTTP, a
// header the upstream's Connection header names is hop-by-hop and does not
// reach the sandbox, even when Connection also says close (which
// http.ReadResponse drops with the whole header).
func TestMITMStripsConnectionNamedResponseHeaders(t *testing.T) {
	for _, conn := range []string{"close, X-Resp-Secret", "X-Resp-Secret, close", "X-Resp-Secret"} {
		t.Run(conn, func(t *testing.T) {
			bt := startBoundTunnel(t, Config{}, func(c *tls.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: "+conn+"\r\nX-Resp-Secret: hop\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			fmt.Fprintf(bt.tc, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", bt.bound)
			resp, err := http.ReadResponse(bufio.NewReader(bt.tc), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %s, want 200", resp.Status)
			}
			if v, ok := resp.Header["X-Resp-Secret"]; ok {
				t.Errorf("header named by upstream's Connection: %q reached the sandbox: X-Resp-Secret: %q", conn, v)
			}
		})
	}
}
