package egress

import (
	"errors"
	"net/netip"
	"testing"
)

// FuzzCheckReach feeds a tenant's allow entries (outside input) and an
// address. CheckReach must never panic nor spin; an entry it refuses
// points at itself; and a single-address entry it accepts is one the dial
// check lets through (for its port), so that a 400 and the proxy agree.
func FuzzCheckReach(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7070", "0.0.0.0/0", "::/0", "10.0.0.0/7", "224.0.0.0/3",
		"64:ff9b::7f00:1", "64:ff9b:1::/48", "2002::/16", "[::7f00:1]:80", "*.localhost", "203.0.113.5", "fc00::/7"} {
		f.Add(s, "10.1.2.3")
	}
	p := proxyWithHost([]string{"10.0.0.0/8"}, "203.0.113.5")
	f.Fuzz(func(t *testing.T, entry, addr string) {
		err := p.CheckReach(allowlist(entry))
		var pe *PatternError
		if err != nil && (!errors.As(err, &pe) || pe.Entry != entry || pe.Index != 0) {
			t.Fatalf("CheckReach(%q) = %v, want a *PatternError for allow[0]", entry, err)
		}
		if ip, perr := netip.ParseAddr(addr); perr == nil {
			internetAgrees(t, p, ip)
		}
		r, reason := parseEntry(entry)
		if reason != "" || r.kind != ruleIP || !r.prefix.IsSingleIP() {
			return
		}
		port := r.port
		if port == 0 {
			port = 443
		}
		ok, _ := p.reachable(mustCompile(t, allowlist(entry)), r.prefix.Addr(), port)
		if ok != (err == nil) {
			t.Fatalf("entry %q: CheckReach says %v, the dial check says reachable %v", entry, err, ok)
		}
		if ip, perr := netip.ParseAddr(addr); perr == nil {
			p.reachable(mustCompile(t, allowlist(entry)), ip, port) // must not panic
		}
	})
}

// internetAgrees: what the whole-internet check lets a name reach, the
// ordinary dial check lets an address reach under the same entries, and it
// is no forbidden address.
func internetAgrees(t *testing.T, p *Proxy, ip netip.Addr) {
	internet := mustCompile(t, allowlist("0.0.0.0/0:8080", "[::/0]:8080"))
	if p.checkInternet(internet, "n.test", ip, 8080) != nil {
		return
	}
	ok, _ := p.reachable(internet, ip, 8080)
	if bad, why := Forbidden(ip); !ok || bad {
		t.Fatalf("checkInternet admits %v (forbidden %v %s, reachable %v)", ip, bad, why, ok)
	}
}
