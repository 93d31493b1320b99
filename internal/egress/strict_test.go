package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Regression tests for the 2026 class of allow-list bypasses seen in a
// peer: a SOCKS5 hostname with a NUL byte passed a suffix check, then the
// dialer used a different host. Each attack below is a target spelled so
// that one parser could read allowed.test and another evil.test. The
// proxy must refuse it and log the denial, or carry it to allowed.test,
// the host its allow-list checked; evil.test is never reached.

// strictEnv is allowed.test (127.0.0.1) and evil.test (127.0.0.2) on one
// port, both open to the operator's proxy so that only the allow-list,
// which names allowed.test, stands between a sandbox and evil.test.
type strictEnv struct {
	port          int
	allowed, evil *tcpServer
	dns           string
	asked         func(string) int
}

func startStrictEnv(t *testing.T) *strictEnv {
	t.Helper()
	serve := func(who string) func(net.Conn) {
		return rawHTTP("", func(*http.Request) string { return "hello from " + who }, func(http.Header) {})
	}
	for range 20 {
		allowed := startTCP(t, serve("allowed.test"))
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(allowed.port())))
		if err != nil {
			allowed.close()
			continue // the port is taken on 127.0.0.2: try another
		}
		ln.Close()
		evil := startTCPOn(t, ln.Addr().String(), serve("evil.test"))
		dns, asked := startDNS(t, map[string]netip.Addr{
			"allowed.test": netip.MustParseAddr("127.0.0.1"),
			"evil.test":    netip.MustParseAddr("127.0.0.2"),
		})
		return &strictEnv{port: allowed.port(), allowed: allowed, evil: evil, dns: dns, asked: asked}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil
}

func (e *strictEnv) proxy(t *testing.T) *testProxy {
	p := strconv.Itoa(e.port)
	open := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("127.0.0.2/32")}
	return startProxy(t, Config{DNS: e.dns, AllowPrivate: open}, allowlist("allowed.test:"+p, "127.0.0.1:"+p, "127.0.0.2:1"))
}

// TestStrictHTTPAndCONNECT: NUL bytes, percent-encoding, userinfo, and a
// URL that disagrees with the Host header are refused and logged; trailing
// dots and mixed case are the same host, carried to allowed.test, and so
// is a CONNECT to allowed.test whatever its Host header names.
func TestStrictHTTPAndCONNECT(t *testing.T) {
	e := startStrictEnv(t)
	p := strconv.Itoa(e.port)
	a, ev := "allowed.test:"+p, "evil.test:"+p
	req := func(url, host string) string {
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", url, host)
	}
	conn := func(target, host string) string {
		return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
	}
	tests := []struct {
		name, raw string
		status    int // 200: carried to allowed.test
	}{
		{"http NUL in the URL host", req("http://allowed.test\x00.evil.test:"+p+"/", a), 400},
		{"http NUL before the suffix", req("http://evil.test\x00.allowed.test:"+p+"/", a), 400},
		{"http NUL in the Host header", req("http://"+a+"/", "allowed.test\x00.evil.test:"+p), 400},
		{"http percent-encoded dot", req("http://allowed%2etest:"+p+"/", a), 400},
		{"http percent-encoded NUL", req("http://allowed.test%00.evil.test:"+p+"/", a), 400},
		{"http percent-encoded Host", req("http://"+a+"/", "allowed%2etest:"+p), 400},
		{"http userinfo names the allowed host", req("http://allowed.test@"+ev+"/", ev), 400},
		{"http userinfo with a port", req("http://"+a+"@"+ev+"/", ev), 400},
		{"http URL allowed, Host evil", req("http://"+a+"/", ev), 403},
		{"http URL evil, Host allowed", req("http://"+ev+"/", a), 403},
		{"http Host without the URL's port", req("http://"+a+"/", "allowed.test"), 403},
		{"http trailing dot", req("http://allowed.test.:"+p+"/", a), 200},
		{"http mixed case", req("http://ALLOWED.Test:"+p+"/", "allowed.TEST:"+p), 200},
		{"connect NUL", conn("allowed.test\x00.evil.test:"+p, a), 400},
		{"connect NUL before the suffix", conn("evil.test\x00.allowed.test:"+p, a), 400},
		{"connect percent-encoded dot", conn("allowed%2etest:"+p, "allowed%2etest:"+p), 400},
		{"connect percent-encoded NUL", conn("allowed.test%00.evil.test:"+p, a), 400},
		{"connect userinfo", conn("allowed.test@"+ev, ev), 400},
		{"connect absolute URI", conn("http://"+a+"/", a), 400},
		{"connect target allowed, Host evil", conn(a, ev), 200}, // the tunnel goes to its target
		{"connect target evil, Host allowed", conn(ev, a), 403},
		{"connect trailing dot", conn("allowed.test.:"+p, "allowed.test.:"+p), 200},
		{"connect mixed case", conn("Allowed.TEST:"+p, "allowed.test:"+p), 200},
		{"connect Host without a port", conn(a, "allowed.test"), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := e.proxy(t)
			c := tp.dial(t, tp.httpAddr)
			io.WriteString(c.Conn, tt.raw)
			method := http.MethodGet
			if strings.HasPrefix(tt.raw, "CONNECT") {
				method = http.MethodConnect
			}
			resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
			if err != nil {
				t.Fatalf("read answer: %v", err)
			}
			var body []byte
			if method != http.MethodConnect || resp.StatusCode != http.StatusOK {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 4096)) // a tunnel's body is the tunnel
			}
			c.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("answer %s %q, want %d", resp.Status, body, tt.status)
			}
			evs := tp.waitLog(t, 1)
			last := evs[len(evs)-1]
			if tt.status != 200 {
				if resp.Header.Get("X-Airlock-Egress") != "denied" || last.Decision != Denied || last.Reason == "" {
					t.Errorf("answer %s (X-Airlock-Egress %q), event %+v: want a logged denial", resp.Status, resp.Header.Get("X-Airlock-Egress"), last)
				}
				return
			}
			if method == http.MethodGet && string(body) != "hello from allowed.test" {
				t.Errorf("body %q, want allowed.test's", body)
			}
			if last.Decision != Allowed || last.Host != "allowed.test" || last.Addr != "127.0.0.1" {
				t.Errorf("event %+v, want allowed to allowed.test at 127.0.0.1", last)
			}
		})
	}
	if n := e.evil.accepted(t); n != 0 {
		t.Errorf("evil.test was connected to %d times", n)
	}
	if n := e.asked("evil.test") + e.asked("allowed.test.evil.test") + e.asked("evil.test.allowed.test"); n != 0 {
		t.Errorf("a name for evil.test was looked up %d times", n)
	}
}

// TestStrictSOCKS: a SOCKS5 hostname with a NUL byte, a percent escape,
// userinfo or surrounding space is refused with a logged denial, never
// cut short or cleaned up into a name the client's own checks did not see;
// a trailing dot or mixed case is allowed.test; a tunnel to allowed.test
// whose request names evil.test still goes to allowed.test.
func TestStrictSOCKS(t *testing.T) {
	e := startStrictEnv(t)
	tests := []struct {
		name, host string
		ok         bool
	}{
		{"NUL after the allowed name", "allowed.test\x00.evil.test", false},
		{"NUL before the allowed suffix", "evil.test\x00.allowed.test", false},
		{"trailing NUL", "allowed.test\x00", false},
		{"percent-encoded dot", "allowed%2etest", false},
		{"percent-encoded NUL", "allowed.test%00.evil.test", false},
		{"userinfo", "allowed.test@evil.test", false},
		{"leading space", " allowed.test", false},
		{"trailing space", "allowed.test ", false},
		{"trailing dot", "allowed.test.", true},
		{"mixed case", "ALLOWED.test", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := e.proxy(t)
			c, code := socksConnect(t, tp, 1, socksName(tt.host), e.port)
			if !tt.ok {
				ev := tp.waitLog(t, 1)[0]
				if code == socksOK || ev.Decision != Denied || ev.Reason == "" {
					t.Errorf("reply %d, event %+v: want a logged refusal", code, ev)
				}
				return
			}
			if code != socksOK {
				t.Fatalf("reply %d, want 0", code)
			}
			fmt.Fprintf(c.Conn, "GET / HTTP/1.1\r\nHost: evil.test:%d\r\n\r\n", e.port)
			resp, err := http.ReadResponse(bufio.NewReader(c.br), nil)
			if err != nil {
				t.Fatalf("read through the tunnel: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "hello from allowed.test" {
				t.Errorf("through the tunnel: %q, want allowed.test's answer", body)
			}
			c.Close()
			if ev := tp.waitLog(t, 1)[0]; ev.Decision != Allowed || ev.Host != "allowed.test" || ev.Addr != "127.0.0.1" {
				t.Errorf("event %+v, want allowed to allowed.test at 127.0.0.1", ev)
			}
		})
	}
	if n := e.evil.accepted(t); n != 0 {
		t.Errorf("evil.test was connected to %d times", n)
	}
}

// TestStrictSNI: after a CONNECT to allowed.test, a ClientHello whose
// server name holds a NUL byte or names evil.test closes the tunnel with a
// logged denial; mixed case and a trailing dot are the same host.
func TestStrictSNI(t *testing.T) {
	e := startStrictEnv(t)
	p := strconv.Itoa(e.port)
	tests := []struct {
		sni string
		ok  bool
	}{
		{"allowed.test\x00.evil.test", false},
		{"evil.test\x00allowed.test", false},
		{"evil.test", false},
		{"allowed.test.evil.test", false},
		{"ALLOWED.Test", true},
		{"allowed.test.", true},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.sni), func(t *testing.T) {
			tp := e.proxy(t)
			c := tp.dial(t, tp.httpAddr)
			if resp := c.connect(t, "allowed.test:"+p); resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			c.Write(clientHello(t, tt.sni))
			c.SetReadDeadline(time.Now().Add(waitFor))
			io.Copy(io.Discard, c) // allowed.test is no TLS server: it closes, or the proxy does
			c.Close()
			ev := tp.waitLog(t, 1)[0]
			if tt.ok != (ev.Decision == Allowed) || !tt.ok && !strings.Contains(ev.Reason, "TLS") {
				t.Errorf("event %+v, want allowed %v", ev, tt.ok)
			}
		})
	}
	if n := e.evil.accepted(t); n != 0 {
		t.Errorf("evil.test was connected to %d times", n)
	}
}

// TestNamesResolveRooted: the proxy asks its resolver for the rooted name,
// so that no search domain of the host's resolv.conf turns a name the
// rules allowed into another ("api.example" into
// "api.example.corp.internal").
func TestNamesResolveRooted(t *testing.T) {
	p := New(Config{})
	var asked []string
	p.lookup = func(_ context.Context, name string) ([]netip.Addr, error) {
		asked = append(asked, name)
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	r := mustCompile(t, allowlist("api.example", "intranet"))
	for _, name := range []string{"api.example", "intranet"} {
		if _, _, err := p.dial(context.Background(), r, r.Match(name, netip.Addr{}, 443), name, netip.Addr{}, 443); err == nil {
			t.Fatalf("dial %s: no error", name)
		}
	}
	if got := strings.Join(asked, " "); got != "api.example. intranet." {
		t.Errorf("resolver asked %q, want the rooted names", got)
	}
}
