package egress

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// TestTenantRulesNeverReachLoopback is the attack of issue 18 item 2 at
// the proxy: a tenant's policy holding every rule that could open the
// host's loopback (a wide block, the listener's own address as an older
// server accepted it, names that resolve to it, localhost names) and a
// request for the listener in every spelling, over HTTP, CONNECT and
// SOCKS5. With no operator opening each is refused and logged as denied,
// and the listener is never connected to.
func TestTenantRulesNeverReachLoopback(t *testing.T) {
	srv := startTCP(t, func(net.Conn) {})
	p := strconv.Itoa(srv.port())
	dns, _ := startDNS(t, map[string]netip.Addr{"loop.example": netip.MustParseAddr("127.0.0.1")})
	// What a tenant could have stored before CheckReach existed.
	policy := allowlist("0.0.0.0/0:"+p, "[::/0]:"+p, "127.0.0.1:"+p, "127.0.0.0/8:"+p, "[::1]:"+p,
		"loop.example:"+p, "localhost:"+p, "x.localhost:"+p)
	tp := startProxy(t, Config{DNS: dns, AllowPrivate: []netip.Prefix{}}, policy)
	hosts := []string{
		"127.0.0.1", "127.1", "0x7f.0.0.1", "0x7f000001", "2130706433", "0177.0.0.1", "0177.1",
		"127.0.0.1.", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1]", "[::7f00:1]", "[64:ff9b::7f00:1]",
		"loop.example", "LOOP.Example.", "localhost", "LOCALHOST", "localhost.", "x.localhost", "a.b.localhost",
	}
	for _, h := range hosts {
		target := h + ":" + p
		t.Run("http "+h, func(t *testing.T) {
			resp, body := tp.dial(t, tp.httpAddr).do(t, get(target))
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Airlock-Egress") != "denied" {
				t.Errorf("GET http://%s/: %s %q, want 403 denied", target, resp.Status, body)
			}
		})
		t.Run("connect "+h, func(t *testing.T) {
			c := tp.dial(t, tp.httpAddr)
			if resp := c.connect(t, target); resp.StatusCode != http.StatusForbidden {
				t.Errorf("CONNECT %s: %s, want 403", target, resp.Status)
			}
		})
		t.Run("socks5 "+h, func(t *testing.T) {
			name := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
			if _, code := socksConnect(t, tp, 1, socksName(name), srv.port()); code != socksNotAllowed {
				t.Errorf("SOCKS5 %s: reply %d, want %d (not allowed)", name, code, socksNotAllowed)
			}
		})
	}
	// The refusal tells who can open it: not the tenant, whose entry
	// would be a 400, but the operator.
	resp, _ := tp.dial(t, tp.httpAddr).do(t, get("127.0.0.1:"+p))
	if hint := resp.Header.Get("X-Airlock-Egress-Allow"); !strings.Contains(hint, "airlock serve --egress-allow-private 127.0.0.1/32") {
		t.Errorf("X-Airlock-Egress-Allow = %q, want the operator's flag", hint)
	}
	for _, ip := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		if _, code := socksConnect(t, tp, 1, socksIP(ip), srv.port()); code != socksNotAllowed {
			t.Errorf("SOCKS5 address %s: reply %d, want %d", ip, code, socksNotAllowed)
		}
	}
	evs := tp.waitLog(t, 3*len(hosts)+4)
	for _, e := range evs {
		if e.Decision != Denied || !strings.Contains(e.Reason, "loopback") && !strings.Contains(e.Reason, "no allow rule") {
			t.Errorf("event %+v, want a denial naming loopback", e)
		}
	}
	if n := srv.accepted(t); n != 0 {
		t.Errorf("the loopback listener was connected to %d times", n)
	}
	// Control: the operator's opening of that one address lets the
	// tenant's rule for it through.
	open := startProxy(t, Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, allowlist("127.0.0.1:"+p))
	if resp := open.dial(t, open.httpAddr).connect(t, "127.0.0.1:"+p); resp.StatusCode != http.StatusOK {
		t.Fatalf("control, opened by the operator: CONNECT %s", resp.Status)
	}
	if n := srv.accepted(t); n != 2 { // the first count's probe, and this
		t.Errorf("control: the listener was connected to %d times, want 2", n)
	}
}
