package egress

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMaxConns(t *testing.T) {
	echo := startEcho(t)
	tp := startProxy(t, Config{MaxConns: 2}, allowlist(echo.addr()))
	c1 := openTunnel(t, tp, echo)
	openTunnel(t, tp, echo)
	wantClosed(t, tp.dial(t, tp.httpAddr), "third connection with MaxConns 2")
	var refused []Event
	for _, e := range tp.waitLog(t, 1) {
		if e.Protocol == "tcp" {
			refused = append(refused, e)
		}
	}
	want := []Event{{SandboxID: "sb1", TenantID: "tenant1", Protocol: "tcp", Decision: Denied,
		Reason: "too many open connections (limit 2)"}}
	if diff := cmp.Diff(want, refused, ignoreVolatile); diff != "" {
		t.Errorf("refusal events (-want +got):\n%s", diff)
	}

	// Closing one makes room for another.
	c1.Close()
	deadline := time.Now().Add(waitFor)
	for {
		c := tp.dial(t, tp.httpAddr)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", echo.addr())
		resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodConnect})
		if err == nil && resp.StatusCode == http.StatusOK {
			echoOnce(t, c, "room again")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after closing one of two: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countedConn counts the client's own bytes, to compare with the proxy's.
type countedConn struct {
	net.Conn
	read, written atomic.Int64
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// TestBytes: each request's event counts the bytes the sandbox sent for it
// (head and body) and received (the whole answer), and the sandbox's
// totals count every byte of its connections.
func TestBytes(t *testing.T) {
	const download, upload = 100_000, 50_000
	srv := startTCP(t, rawHTTP("", func(r *http.Request) string {
		if r.Method == http.MethodGet {
			return strings.Repeat("d", download)
		}
		return "ok"
	}, func(http.Header) {}))
	tp := startProxy(t, Config{}, allowlist(srv.addr()))
	raw, err := net.Dial("tcp", tp.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetDeadline(time.Now().Add(waitFor))
	cc := &countedConn{Conn: raw}
	c := &clientConn{Conn: cc, br: bufio.NewReader(cc)}

	getReq := get(srv.addr())
	postReq := fmt.Sprintf("POST http://%s/up HTTP/1.1\r\nHost: %[1]s\r\nContent-Length: %d\r\n\r\n%s",
		srv.addr(), upload, strings.Repeat("u", upload))
	type counts struct{ Up, Down int64 }
	var want []counts
	for _, req := range []string{getReq, postReq} {
		down0 := cc.read.Load()
		if resp, _ := c.do(t, req); resp.StatusCode != http.StatusOK {
			t.Fatalf("%.20q: %s", req, resp.Status)
		}
		want = append(want, counts{int64(len(req)), cc.read.Load() - down0})
	}
	if want[0].Down < download || want[1].Up < upload {
		t.Fatalf("test is broken: counted %+v", want)
	}
	c.Close()
	var got []counts
	for _, e := range tp.waitLog(t, 2) {
		got = append(got, counts{e.BytesUp, e.BytesDown})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-request bytes (-want sent/received by the client +got in events):\n%s", diff)
	}
	up, down := tp.sb.Bytes()
	if up != cc.written.Load() || down != cc.read.Load() {
		t.Errorf("Bytes() = %d up, %d down; the client sent %d and received %d", up, down, cc.written.Load(), cc.read.Load())
	}
}

// TestConnectBytes: a tunnel's event counts the CONNECT request and the
// proxy's answer along with the bytes carried.
func TestConnectBytes(t *testing.T) {
	echo := startEcho(t)
	tp := startProxy(t, Config{}, allowlist(echo.addr()))
	c := openTunnel(t, tp, echo) // CONNECT, then "ping" both ways
	payload := strings.Repeat("p", 10_000)
	echoOnce(t, c, payload)
	c.Close()
	ev := tp.waitLog(t, 1)[0]
	head := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", echo.addr())
	wantUp := int64(len(head) + len("ping") + len(payload))
	wantDown := int64(len("HTTP/1.1 200 Connection established\r\n\r\n") + len("ping") + len(payload))
	if ev.BytesUp != wantUp || ev.BytesDown != wantDown {
		t.Errorf("event bytes up %d down %d, want %d and %d", ev.BytesUp, ev.BytesDown, wantUp, wantDown)
	}
}
