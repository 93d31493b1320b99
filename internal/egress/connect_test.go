package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// startTLS starts an HTTPS server whose certificate holds the IP SAN
// 127.0.0.1, and counts the requests that reach its handler.
func startTLS(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "secret page")
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts, &hits
}

func tlsConfig(ts *httptest.Server) *tls.Config {
	return ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
}

// TestConnectTLS: https through the proxy, as curl or pip do it. The target
// is an IP, for which TLS clients send no server name: nothing to compare.
func TestConnectTLS(t *testing.T) {
	ts, hits := startTLS(t)
	target := ts.Listener.Addr().String()
	tp := startProxy(t, Config{}, allowlist(target))
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: tp.httpAddr}), TLSClientConfig: tlsConfig(ts)}
	resp, err := (&http.Client{Transport: tr, Timeout: waitFor}).Get(ts.URL + "/page")
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if resp.StatusCode != http.StatusOK || string(body) != "secret page" || hits.Load() != 1 {
		t.Fatalf("got %s %q after %d hits, want 200 %q after 1", resp.Status, body, hits.Load(), "secret page")
	}
	want := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: "connect", Host: "127.0.0.1",
		Port: portOf(t, target), Addr: "127.0.0.1", Decision: Allowed, Rule: target}}
	if diff := cmp.Diff(want, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestConnectSNIFronting: a tunnel allowed for one host whose ClientHello
// names another is cut before the TLS server sees the hello.
func TestConnectSNIFronting(t *testing.T) {
	ts, hits := startTLS(t)
	target := ts.Listener.Addr().String()
	tp := startProxy(t, Config{}, allowlist(target))
	c := tp.dial(t, tp.httpAddr)
	if resp := c.connect(t, target); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", resp.Status)
	}
	cfg := tlsConfig(ts)
	cfg.ServerName = "other.example"
	cfg.InsecureSkipVerify = true // the handshake must fail for the proxy's sake, not the certificate's
	if err := tls.Client(c, cfg).Handshake(); err == nil {
		t.Fatal("TLS handshake naming other.example through a tunnel to 127.0.0.1 succeeded")
	}
	want := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: "connect", Host: "127.0.0.1",
		Port: portOf(t, target), Addr: "127.0.0.1", Decision: Denied, Rule: target,
		Reason: `TLS server name "other.example" differs from the CONNECT target 127.0.0.1 (domain fronting guard)`}}
	if diff := cmp.Diff(want, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if hits.Load() != 0 {
		t.Errorf("fronted request reached the server %d times", hits.Load())
	}
}

// TestConnectServerSpeaksFirst: plain TCP through CONNECT where the server
// talks first (SMTP, IMAP, FTP, MySQL). The client waits for the greeting
// and sends nothing, so the tunnel must carry upstream bytes before the
// client's first ones.
func TestConnectServerSpeaksFirst(t *testing.T) {
	srv := startTCP(t, func(c net.Conn) {
		io.WriteString(c, "220 ready\r\n")
		io.Copy(c, c)
	})
	tp := startProxy(t, Config{}, allowlist(srv.addr()))
	c := tp.dial(t, tp.httpAddr)
	if resp := c.connect(t, srv.addr()); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", resp.Status)
	}
	// Shorter than sniTimeout, which is how long the proxy waits for the
	// client's first bytes before giving up on the tunnel.
	c.SetReadDeadline(time.Now().Add(sniTimeout / 2))
	line, err := c.br.ReadString('\n')
	if err != nil || line != "220 ready\r\n" {
		t.Fatalf("greeting through the tunnel: %q, %v; want %q", line, err, "220 ready\r\n")
	}
}

// openTunnel returns a client connection with a working tunnel to echo.
func openTunnel(t *testing.T, tp *testProxy, echo *tcpServer) *clientConn {
	t.Helper()
	c := tp.dial(t, tp.httpAddr)
	if resp := c.connect(t, echo.addr()); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", resp.Status)
	}
	echoOnce(t, c, "ping")
	return c
}

func echoOnce(t *testing.T, c *clientConn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write through tunnel: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("echo through tunnel: %q, %v; want %q", buf, err, msg)
	}
}

// wantClosed checks that the proxy ended c: a read ends in EOF or a reset,
// not in the test's own deadline.
func wantClosed(t *testing.T, c *clientConn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitFor))
	_, err := c.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: tunnel still open (read: %v)", what, err)
	}
}

func TestCloseCutsTunnels(t *testing.T) {
	before := runtime.NumGoroutine()
	echo := startEcho(t)
	tp := startProxy(t, Config{}, allowlist(echo.addr()))
	c := openTunnel(t, tp, echo)
	done := make(chan error, 1)
	go func() { done <- tp.sb.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Close did not return with a tunnel open")
	}
	wantClosed(t, c, "after Close")
	if _, err := net.Dial("tcp", tp.httpAddr); err == nil {
		t.Error("the HTTP listener still accepts after Close")
	}
	if err := tp.sb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	echo.close()
	c.Close()
	waitGoroutines(t, before)
}

// waitGoroutines waits for the goroutine count to fall back to before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseCutsPendingRequest: Close also ends a plain HTTP request waiting
// on a slow upstream, rather than waiting for the upstream to answer.
func TestCloseCutsPendingRequest(t *testing.T) {
	got := make(chan struct{})
	srv := startTCP(t, func(c net.Conn) {
		http.ReadRequest(bufio.NewReader(c))
		close(got)
		io.Copy(io.Discard, c) // never answers
	})
	tp := startProxy(t, Config{IdleTimeout: time.Hour}, allowlist(srv.addr()))
	c := tp.dial(t, tp.httpAddr)
	io.WriteString(c, get(srv.addr()))
	<-got
	done := make(chan error, 1)
	go func() { done <- tp.sb.Close() }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Error("Close did not return while a request waited on its upstream")
		srv.close() // lets Close return
		<-done
	}
}

func TestIdleTimeoutClosesTunnel(t *testing.T) {
	echo := startEcho(t)
	tp := startProxy(t, Config{IdleTimeout: 200 * time.Millisecond}, allowlist(echo.addr()))
	c := openTunnel(t, tp, echo)
	wantClosed(t, c, "quiet tunnel with a 200ms idle timeout")
	ev := tp.waitLog(t, 1)[0]
	if ev.Decision != Allowed || ev.Protocol != "connect" {
		t.Errorf("event %+v, want an allowed connect", ev)
	}
}

// TestIdleTimeoutSparesBusyResponse: the idle timeout is about silence,
// not length: a response that keeps flowing for longer must arrive whole.
func TestIdleTimeoutSparesBusyResponse(t *testing.T) {
	const chunks = 12
	srv := startTCP(t, func(c net.Conn) {
		http.ReadRequest(bufio.NewReader(c))
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", chunks)
		for range chunks {
			time.Sleep(100 * time.Millisecond) // well inside the idle timeout
			io.WriteString(c, "x")
		}
	})
	tp := startProxy(t, Config{IdleTimeout: 500 * time.Millisecond}, allowlist(srv.addr()))
	c := tp.dial(t, tp.httpAddr)
	io.WriteString(c, get(srv.addr()))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != strings.Repeat("x", chunks) {
		t.Fatalf("slow but busy response cut: %q, %v; want %d bytes", body, err, chunks)
	}
}

// TestConnectOpenAndCut: the proxy says when a tunnel opens (with its
// target) and when it ends, and a tunnel still open when the proxy stops
// is logged cut.
func TestConnectOpenAndCut(t *testing.T) {
	ts, _ := startTLS(t)
	target := ts.Listener.Addr().String()
	var mu sync.Mutex
	var opened []Event
	ended := 0
	tp := startProxy(t, Config{OnOpen: func(e Event) func() {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, e)
		return func() { mu.Lock(); ended++; mu.Unlock() }
	}}, allowlist(target))
	c := tp.dial(t, tp.httpAddr)
	if resp := c.connect(t, target); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", resp.Status)
	}
	mu.Lock()
	got := append([]Event(nil), opened...)
	mu.Unlock()
	want := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: "connect", Host: "127.0.0.1",
		Port: portOf(t, target), Addr: "127.0.0.1", Decision: Allowed, Rule: target}}
	if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
		t.Errorf("opened (-want +got):\n%s", diff)
	}
	tp.sb.Close()
	evs := tp.waitLog(t, 1)
	if !evs[0].Cut || evs[0].Reason != ReasonCut || evs[0].Decision != Allowed {
		t.Errorf("the tunnel cut by Close was logged %+v", evs[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if ended != 1 {
		t.Errorf("ended called %d times, want 1", ended)
	}
}
