package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// closedPort returns a loopback port nothing listens on, held for the
// test by a bound socket that never listens (connecting to it is refused),
// so no listener the test starts later, the proxy's own included, is
// handed the same port.
func closedPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// TestUpstreamFailureIsReportedAsSuch: when the allow-list lets a request
// or tunnel through and the upstream fails, the client gets a 502 (504 for
// a timeout) saying so, with X-Airlock-Egress: upstream-error and the
// kind, and the event stays "allowed" with the kind in upstream_error.
func TestUpstreamFailureIsReportedAsSuch(t *testing.T) {
	dns, _ := startDNS(t, map[string]netip.Addr{})
	refused := strconv.Itoa(closedPort(t))
	silent := startTCP(t, func(c net.Conn) { time.Sleep(2 * time.Second) })
	hangup := startTCP(t, func(c net.Conn) { c.Read(make([]byte, 1)) })
	type answer struct {
		Status       int
		Egress, Kind string
		Body         string
	}
	tests := []struct {
		name    string
		request string
		proto   string
		host    string
		port    int
		rule    string
		want    answer
		reason  string
	}{
		{"http, DNS", get("nx.example"), "http", "nx.example", 80, "nx.example",
			answer{502, "upstream-error", "dns", "airlock egress: nx.example:80: DNS lookup failed: no such host\n"},
			"DNS lookup failed: no such host"},
		{"connect, DNS", connectReq("nx.example:443"), "connect", "nx.example", 443, "nx.example",
			answer{502, "upstream-error", "dns", "airlock egress: nx.example:443: DNS lookup failed: no such host\n"},
			"DNS lookup failed: no such host"},
		{"http, refused", get("127.0.0.1:" + refused), "http", "127.0.0.1", atoi(refused), "127.0.0.1:" + refused,
			answer{502, "upstream-error", "refused", "airlock egress: 127.0.0.1:" + refused + ": connection refused connecting to 127.0.0.1:" + refused + "\n"},
			"connection refused connecting to 127.0.0.1:" + refused},
		{"connect, refused", connectReq("127.0.0.1:" + refused), "connect", "127.0.0.1", atoi(refused), "127.0.0.1:" + refused,
			answer{502, "upstream-error", "refused", "airlock egress: 127.0.0.1:" + refused + ": connection refused connecting to 127.0.0.1:" + refused + "\n"},
			"connection refused connecting to 127.0.0.1:" + refused},
		{"http, no answer in time", get(silent.addr()), "http", "127.0.0.1", silent.port(), silent.addr(),
			answer{504, "upstream-error", "timeout", "airlock egress: " + silent.addr() + ": timed out\n"}, "timed out"},
		{"http, upstream hangs up", get(hangup.addr()), "http", "127.0.0.1", hangup.port(), hangup.addr(),
			answer{502, "upstream-error", "reset", "airlock egress: " + hangup.addr() + ": the upstream closed the connection before answering\n"},
			"the upstream closed the connection before answering"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := startProxy(t, Config{DNS: dns, IdleTimeout: 300 * time.Millisecond}, allowlist(tt.rule))
			resp, body := tp.dial(t, tp.httpAddr).do(t, tt.request)
			got := answer{resp.StatusCode, resp.Header.Get("X-Airlock-Egress"), resp.Header.Get("X-Airlock-Egress-Error"), body}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			want := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: tt.proto, Host: tt.host, Port: tt.port,
				Decision: Allowed, Rule: tt.rule, Reason: tt.reason, UpstreamError: tt.want.Kind, Status: tt.want.Status}}
			if diff := cmp.Diff(want, tp.waitLog(t, 1), ignoreVolatile, ignoreAddr); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSOCKSUpstreamFailureReplyCodes: SOCKS5 says what failed with the
// RFC 1928 reply code, and the event names the kind.
func TestSOCKSUpstreamFailureReplyCodes(t *testing.T) {
	dns, _ := startDNS(t, map[string]netip.Addr{})
	refused := closedPort(t)
	tests := []struct {
		name string
		addr []byte
		port int
		rule string
		code byte
		kind string
	}{
		{"DNS", socksName("nx.example"), 443, "nx.example", socksHostUnreach, UpstreamDNS},
		{"refused", socksIP("127.0.0.1"), refused, fmt.Sprintf("127.0.0.1:%d", refused), socksRefused, UpstreamRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := startProxy(t, Config{DNS: dns}, allowlist(tt.rule))
			if _, code := socksConnect(t, tp, 1, tt.addr, tt.port); code != tt.code {
				t.Errorf("reply %d, want %d", code, tt.code)
			}
			ev := tp.waitLog(t, 1)[0]
			if ev.Decision != Allowed || ev.UpstreamError != tt.kind || ev.Reason == "" {
				t.Errorf("event %+v, want allowed with upstream_error %q and a reason", ev, tt.kind)
			}
		})
	}
}

// TestUpstreamTLSFailureInIntercept: in the secret path the proxy's own
// TLS handshake with an upstream it cannot verify is a tls failure, to
// the client inside its tunnel and in both events.
func TestUpstreamTLSFailureInIntercept(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{noRootCAs: true})
	e.setSecrets(e.keyBinding())
	resp, body := mitmDo(t, e.client(e.sandboxRoots()), mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	got := []string{resp.Status, resp.Header.Get("X-Airlock-Egress"), resp.Header.Get("X-Airlock-Egress-Error")}
	if diff := cmp.Diff([]string{"502 Bad Gateway", "upstream-error", "tls"}, got); diff != "" || !strings.Contains(body, "TLS handshake with the upstream failed") {
		t.Errorf("answer (-want +got):\n%s\nbody %q", diff, body)
	}
	e.events.wait(t, "tunnel", func(e Event) bool { return e.Protocol == "connect" })
	for _, ev := range e.events.all() {
		if (ev.Protocol == "https" || ev.Protocol == "connect") && (ev.Decision != Allowed || ev.UpstreamError != UpstreamTLS) {
			t.Errorf("event %+v, want allowed with upstream_error tls", ev)
		}
	}
}

func connectReq(target string) string {
	return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// ignoreAddr: a request that failed after connecting has the address.
var ignoreAddr = cmpopts.IgnoreFields(Event{}, "Addr")

// TestClassifyUpstream: every kind of upstream failure gets its name, its
// HTTP status and its SOCKS5 reply, including those a loopback test
// cannot provoke (unreachable networks, connect timeouts).
func TestClassifyUpstream(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 443}
	dial := func(errno syscall.Errno) error {
		return fmt.Errorf("resolve x: %w", errors.Join(&net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", errno)}))
	}
	type result struct {
		Kind, Msg string
		Status    int
		SOCKS     byte
	}
	tests := []struct {
		name      string
		err       error
		handshake bool
		want      result
	}{
		{"DNS", &net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}, false,
			result{"dns", "DNS lookup failed: no such host", 502, socksHostUnreach}},
		{"refused", dial(syscall.ECONNREFUSED), false,
			result{"refused", "connection refused connecting to 203.0.113.7:443", 502, socksRefused}},
		{"network unreachable", dial(syscall.ENETUNREACH), false,
			result{"unreachable", "network is unreachable connecting to 203.0.113.7:443", 502, socksNetUnreach}},
		{"no route to host", dial(syscall.EHOSTUNREACH), false,
			result{"unreachable", "no route to host connecting to 203.0.113.7:443", 502, socksHostUnreach}},
		{"connect timed out", dial(syscall.ETIMEDOUT), false,
			result{"timeout", "timed out connecting to 203.0.113.7:443", 504, socksTTLExpired}},
		{"dial deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), false,
			result{"timeout", "timed out", 504, socksTTLExpired}},
		{"reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false,
			result{"reset", "connection reset by the upstream", 502, socksFailure}},
		{"closed before answering", io.ErrUnexpectedEOF, false,
			result{"reset", "the upstream closed the connection before answering", 502, socksFailure}},
		{"unknown CA", x509.UnknownAuthorityError{}, false,
			result{"tls", "TLS handshake with the upstream failed: x509: certificate signed by unknown authority", 502, socksFailure}},
		{"reset during the handshake", io.EOF, true,
			result{"tls", "TLS handshake with the upstream failed: EOF", 502, socksFailure}},
		{"timeout during the handshake", context.DeadlineExceeded, true,
			result{"timeout", "timed out", 504, socksTTLExpired}},
		{"other", errors.New("response head too large"), false,
			result{"other", "response head too large", 502, socksFailure}},
	}
	for _, tt := range tests {
		ue := upstreamFailure(tt.err, tt.handshake)
		got := result{ue.kind, ue.msg, ue.status(), ue.socksCode()}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
