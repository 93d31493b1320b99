package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"
)

// startDNS serves zone (names without the final dot) over UDP on
// 127.0.0.1 and counts the questions about each name. Other names get
// NXDOMAIN; a known name has A records only.
func startDNS(t *testing.T, zone map[string]netip.Addr) (addr string, asked func(string) int) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
			mu.Lock()
			counts[name]++
			mu.Unlock()
			ip, ok := zone[name]
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
			if !ok {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60},
					dnsmessage.AResource{A: ip.As4()})
			}
			if msg, err := b.Finish(); err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		wg.Wait()
	})
	return pc.LocalAddr().String(), func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[name]
	}
}

// TestNameResolvingToLoopback: the proxy resolves names itself, and a name
// rule never opens a forbidden address: "svc.test" resolving to 127.0.0.1
// is refused unless an IP rule lists 127.0.0.1 too.
func TestNameResolvingToLoopback(t *testing.T) {
	dnsAddr, asked := startDNS(t, map[string]netip.Addr{"svc.test": netip.MustParseAddr("127.0.0.1")})
	var hits atomic.Int64
	srv := startTCP(t, rawHTTP("", func(*http.Request) string { return "svc" }, func(http.Header) { hits.Add(1) }))
	p := strconv.Itoa(srv.port())
	nameRule, ipRule := "svc.test:"+p, "127.0.0.1:"+p
	const refusal = "svc.test resolves to loopback address 127.0.0.1"
	tests := []struct {
		proto  string
		allow  []string
		reason string // "" for allowed
	}{
		{"http", []string{nameRule}, refusal},
		{"connect", []string{nameRule}, refusal},
		{"socks5", []string{nameRule}, refusal},
		{"http", []string{nameRule, ipRule}, ""},
		{"connect", []string{nameRule, ipRule}, ""},
		{"socks5", []string{nameRule, ipRule}, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.proto, tt.allow), func(t *testing.T) {
			hits0, asked0 := hits.Load(), asked("svc.test")
			tp := startProxy(t, Config{DNS: dnsAddr}, allowlist(tt.allow...))
			status := httpVia(t, tp, tt.proto, "svc.test:"+p)
			wantStatus, wantHits := http.StatusOK, int64(1)
			if tt.reason != "" {
				wantStatus, wantHits = http.StatusForbidden, 0
			}
			if status != wantStatus {
				t.Errorf("status %d, want %d", status, wantStatus)
			}
			if got := hits.Load() - hits0; got != wantHits {
				t.Errorf("server reached %d times, want %d", got, wantHits)
			}
			if asked("svc.test") == asked0 {
				t.Error("the proxy never asked its DNS server for svc.test")
			}
			want := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: tt.proto, Host: "svc.test", Port: srv.port(),
				Addr: "127.0.0.1", Decision: Allowed, Rule: nameRule, Reason: tt.reason}
			if tt.reason != "" {
				want.Addr, want.Decision = "", Denied
				if tt.proto != "socks5" {
					want.Status = http.StatusForbidden
				}
			} else if tt.proto == "http" {
				want.Status = http.StatusOK
			}
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// httpVia sends one GET to target through the proxy by proto and returns
// the HTTP status, 403 for a SOCKS "not allowed".
func httpVia(t *testing.T, tp *testProxy, proto, target string) int {
	t.Helper()
	host, port, _ := net.SplitHostPort(target)
	var c *clientConn
	switch proto {
	case "http":
		resp, _ := tp.dial(t, tp.httpAddr).do(t, get(target))
		return resp.StatusCode
	case "connect":
		c = tp.dial(t, tp.httpAddr)
		if resp := c.connect(t, target); resp.StatusCode != http.StatusOK {
			return resp.StatusCode
		}
	case "socks5":
		n, _ := strconv.Atoi(port)
		var code byte
		if c, code = socksConnect(t, tp, 1, socksName(host), n); code == socksNotAllowed {
			return http.StatusForbidden
		} else if code != socksOK {
			t.Fatalf("SOCKS reply %d", code)
		}
	}
	resp, body := c.do(t, fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\n\r\n", target))
	c.Close()
	if resp.StatusCode == http.StatusOK && body != "svc" {
		t.Errorf("body %q through the tunnel", body)
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
