package egress

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// TestWholeInternetAdmitsPublicNames runs E2B's open internet ("0.0.0.0/0",
// "::/0") against the fake internet, over HTTP, CONNECT and SOCKS5: a name
// that resolves to a public address is carried and logged under the entry
// that admitted it; a name resolving to a private, metadata or loopback
// address, or to a public and a private one at once, is refused without
// touching either; a deny entry wins, by name or by address; a narrower
// block never admits a name.
func TestWholeInternetAdmitsPublicNames(t *testing.T) {
	n := fakenet.Start(t)
	internet := []string{"0.0.0.0/0", "::/0"}
	const pub = "; " + notePublic
	tests := []struct {
		name   string
		policy Policy
		host   string
		rule   string // the entry the event names
		reason string // "" for carried
	}{
		{"public name", Policy{Allow: internet}, fakenet.AllowedName, "0.0.0.0/0", ""},
		{"public name, IPv4 entry alone", Policy{Allow: internet[:1]}, fakenet.WWWAllowedName, "0.0.0.0/0", ""},
		{"private name", Policy{Allow: internet}, fakenet.PrivateName, "0.0.0.0/0",
			"private.test resolves to private address " + fakenet.PrivateIP + pub},
		{"public and private at once", Policy{Allow: internet}, fakenet.MixedName, "0.0.0.0/0",
			"mixed.test resolves to private address " + fakenet.PrivateIP + pub},
		{"metadata name", Policy{Allow: internet}, fakenet.MetaName, "0.0.0.0/0",
			"meta.test resolves to metadata address " + fakenet.MetaIP + pub},
		{"loopback name", Policy{Allow: internet}, fakenet.LoopName, "0.0.0.0/0",
			"loop.test resolves to loopback address 127.0.0.1" + pub},
		{"deny by name wins", Policy{Allow: internet, Deny: []string{fakenet.AllowedName}}, fakenet.AllowedName,
			fakenet.AllowedName, `denied by rule "allowed.test"`},
		{"deny by address wins", Policy{Allow: internet, Deny: []string{fakenet.AllowedIP}}, fakenet.AllowedName,
			fakenet.AllowedIP, `allowed.test resolves to denied address 203.0.113.10; denied by rule "203.0.113.10"`},
		{"IPv6 entry alone, IPv4 name", Policy{Allow: internet[1:]}, fakenet.AllowedName, "::/0",
			`allowed.test resolves to IPv4 address 203.0.113.10; no allow entry lists the whole IPv4 internet ("0.0.0.0/0") for port 80`},
		{"narrower block", Policy{Allow: []string{"203.0.113.0/24"}}, fakenet.AllowedName, "",
			"no allow rule matches allowed.test:80"},
		{"narrower block, the address itself", Policy{Allow: []string{"203.0.113.0/24"}}, fakenet.AllowedIP, "203.0.113.0/24", ""},
	}
	for _, tt := range tests {
		for _, proto := range []string{"http", "connect", "socks5"} {
			t.Run(tt.name+"/"+proto, func(t *testing.T) {
				tt.policy.Mode = ModeAllowlist
				tp := startProxy(t, Config{DNS: n.DNS}, tt.policy)
				before := fakeHits(n)
				status, body := fetchVia(t, tp, proto, net.JoinHostPort(tt.host, "80"))
				want := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: proto, Host: tt.host, Port: 80,
					Addr: fakenet.AllowedIP, Decision: Allowed, Rule: tt.rule, Reason: tt.reason}
				wantHits := map[string]int{fakenet.AllowedIP: 1}
				if tt.reason == "" {
					if status != http.StatusOK || !strings.HasPrefix(body, "hello from ") {
						t.Errorf("%s %s: %d %q, want 200 from the fake host", proto, tt.host, status, body)
					}
					if proto == "http" {
						want.Status = http.StatusOK
					}
				} else {
					if status != http.StatusForbidden {
						t.Errorf("%s %s: %d %q, want refused", proto, tt.host, status, body)
					}
					want.Addr, want.Decision, wantHits = "", Denied, map[string]int{}
					if proto != "socks5" {
						want.Status = http.StatusForbidden
					}
				}
				if diff := cmp.Diff(wantHits, hitsSince(n, before)); diff != "" {
					t.Errorf("fake hosts reached (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// fakeHits counts the connections each fake host's HTTP server took.
func fakeHits(n *fakenet.Net) map[string]int {
	m := map[string]int{}
	for _, ip := range []string{fakenet.AllowedIP, fakenet.DeniedIP, fakenet.RebindIP, fakenet.MetaIP, fakenet.PrivateIP} {
		m[ip] = n.Hits(ip + ":80")
	}
	return m
}

func hitsSince(n *fakenet.Net, before map[string]int) map[string]int {
	d := map[string]int{}
	for ip, h := range fakeHits(n) {
		if h != before[ip] {
			d[ip] = h - before[ip]
		}
	}
	return d
}

// fetchVia sends one GET to target through the proxy by proto and returns
// the status and body; a refused SOCKS request counts as 403. The client
// connection is closed before it returns, so the proxy has logged it by
// the time waitLog looks.
func fetchVia(t *testing.T, tp *testProxy, proto, target string) (int, string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(target)
	var c *clientConn
	switch proto {
	case "http":
		c = tp.dial(t, tp.httpAddr)
		resp, body := c.do(t, get(target))
		c.Close()
		return resp.StatusCode, body
	case "connect":
		c = tp.dial(t, tp.httpAddr)
		if resp := c.connect(t, target); resp.StatusCode != http.StatusOK {
			return resp.StatusCode, ""
		}
	case "socks5":
		p, _ := strconv.Atoi(port)
		var code byte
		if c, code = socksConnect(t, tp, 1, socksName(host), p); code != socksOK {
			c.Close()
			if code == socksNotAllowed {
				return http.StatusForbidden, ""
			}
			return 0, fmt.Sprintf("SOCKS reply %d", code)
		}
	}
	defer c.Close()
	resp, body := c.do(t, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	return resp.StatusCode, body
}
