package egress

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The proxy tests run the proxy on loopback listeners in the test's own
// network namespace, against servers on 127.0.0.1. Loopback is forbidden
// unless the operator opens it (startProxy opens 127.0.0.1 by default) and
// an IP rule lists it, so every policy here names "127.0.0.1:<port>" for
// the servers the proxy may reach.

// waitFor is how long a test waits for something that must happen; it
// bounds a failure, not a speed.
const waitFor = 10 * time.Second

type testProxy struct {
	sb        *Sandbox
	httpAddr  string
	socksAddr string
}

func allowlist(allow ...string) Policy { return Policy{Mode: ModeAllowlist, Allow: allow} }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startProxy attaches a sandbox under p to a proxy with cfg; it is closed
// when the test ends.
func startProxy(t *testing.T, cfg Config, p Policy) *testProxy {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LogSize == 0 {
		cfg.LogSize = 10000 // the tests read events through Log
	}
	if cfg.AllowPrivate == nil {
		// The operator's opening of the test servers' address; a test
		// of the operator's choice passes an empty, non-nil list.
		cfg.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	hl, sl := listen(t), listen(t)
	sb := New(cfg).Attach("sb1", "tenant1", mustCompile(t, p), hl, sl)
	t.Cleanup(func() { sb.Close() })
	return &testProxy{sb: sb, httpAddr: hl.Addr().String(), socksAddr: sl.Addr().String()}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "https://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// clientConn is the sandbox's side of one connection to the proxy; reads
// go through br, which may hold bytes already received.
type clientConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *clientConn) Read(p []byte) (int, error) { return c.br.Read(p) }

func (tp *testProxy) dial(t *testing.T, addr string) *clientConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(waitFor))
	t.Cleanup(func() { c.Close() })
	return &clientConn{Conn: c, br: bufio.NewReader(c)}
}

// do writes a raw request and reads the answer and its body.
func (c *clientConn) do(t *testing.T, raw string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c.Conn, raw); err != nil {
		t.Fatalf("write request: %v", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

// connect asks for a tunnel to target and returns the proxy's answer.
func (c *clientConn) connect(t *testing.T, target string) *http.Response {
	t.Helper()
	fmt.Fprintf(c.Conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("read CONNECT response: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		io.ReadAll(resp.Body)
	}
	return resp
}

func get(target string) string {
	return fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
}

// waitLog waits for at least n events and returns them all.
func (tp *testProxy) waitLog(t *testing.T, n int) []Event {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		evs := tp.sb.Log(0, 0)
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d events, want %d: %+v", len(evs), n, evs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ignoreVolatile leaves out of an Event comparison what a test cannot
// predict: numbering, clock, and (checked on their own) byte counts.
var ignoreVolatile = cmpopts.IgnoreFields(Event{}, "Seq", "Time", "DurationMS", "BytesUp", "BytesDown")

func TestForwardHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	srv := startTCP(t, rawHTTP("Connection: X-Resp-Secret\r\nX-Resp-Secret: hop\r\n"+
		"Keep-Alive: timeout=1\r\nProxy-Authenticate: Basic\r\nX-Resp-Kept: end\r\n",
		func(r *http.Request) string { return "hello " + r.URL.Path },
		func(h http.Header) {
			mu.Lock()
			seen = append(seen, h)
			mu.Unlock()
		}))
	target := srv.addr()
	tp := startProxy(t, Config{}, allowlist(target))
	c := tp.dial(t, tp.httpAddr)

	// Two requests on one client connection: the proxy keeps it alive.
	for _, path := range []string{"/one", "/two"} {
		resp, body := c.do(t, "GET http://"+target+path+" HTTP/1.1\r\nHost: "+target+"\r\n"+
			"Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"+
			"Connection: X-Secret, keep-alive\r\nX-Secret: named by Connection\r\n"+
			"Keep-Alive: timeout=5\r\nTE: trailers\r\nX-Kept: yes\r\n\r\n")
		if resp.StatusCode != http.StatusOK || body != "hello "+path {
			t.Fatalf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, body, "hello "+path)
		}
		got := map[string]string{}
		for _, k := range []string{"X-Resp-Secret", "Keep-Alive", "Proxy-Authenticate", "X-Resp-Kept"} {
			got[k] = resp.Header.Get(k)
		}
		want := map[string]string{"X-Resp-Secret": "", "Keep-Alive": "", "Proxy-Authenticate": "", "X-Resp-Kept": "end"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s: response headers (-want +got):\n%s", path, diff)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(seen))
	}
	for _, h := range seen {
		for _, k := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Secret", "Keep-Alive", "Te"} {
			if v, ok := h[k]; ok {
				t.Errorf("hop-by-hop header %s: %q forwarded upstream", k, v)
			}
		}
		if h.Get("X-Kept") != "yes" {
			t.Errorf("end-to-end header X-Kept lost: %v", h)
		}
	}
	evs := tp.waitLog(t, 2)
	want := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: "http", Host: "127.0.0.1", Port: srv.port(),
		Addr: "127.0.0.1", Decision: Allowed, Rule: target, Status: http.StatusOK}
	if diff := cmp.Diff([]Event{want, want}, evs, ignoreVolatile); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestEnv(t *testing.T) {
	env := Env()
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		if env[k] != fmt.Sprintf("http://127.0.0.1:%d", HTTPPort) {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	// socks5h: the proxy resolves names, never the sandbox.
	if env["ALL_PROXY"] != fmt.Sprintf("socks5h://127.0.0.1:%d", SOCKSPort) {
		t.Errorf("ALL_PROXY = %q", env["ALL_PROXY"])
	}
}

// The response's Connection header names hop-by-hop headers too, also when
// it says close as well; net/http drops a Connection header holding
// "close" while parsing the response, before the proxy can read its other
// names.
func TestForwardStripsConnectionNamedResponseHeaders(t *testing.T) {
	for _, conn := range []string{"X-Resp-Secret", "close, X-Resp-Secret", "X-Resp-Secret, close"} {
		t.Run(conn, func(t *testing.T) {
			srv := startTCP(t, rawHTTP("Connection: "+conn+"\r\nX-Resp-Secret: hop\r\n",
				func(*http.Request) string { return "ok" }, func(http.Header) {}))
			tp := startProxy(t, Config{}, allowlist(srv.addr()))
			resp, _ := tp.dial(t, tp.httpAddr).do(t, get(srv.addr()))
			if v := resp.Header.Get("X-Resp-Secret"); v != "" {
				t.Errorf("header named by upstream's Connection: %q reached the client: X-Resp-Secret: %q", conn, v)
			}
		})
	}
}
