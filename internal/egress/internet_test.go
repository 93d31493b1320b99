package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAdmitPublic pins the check on what a name a whole-internet entry
// admitted resolves to: every address public (as the dial check reads
// it, with no rule: the operator's openings and narrower IP rules do not
// count), none listed by a deny entry, and only those of a family an
// entry covers dialed.
func TestAdmitPublic(t *testing.T) {
	// The operator opened 10.0.0.0/8 and the host owns 203.0.113.77.
	p := proxyWithHost([]string{"10.0.0.0/8"}, "203.0.113.77")
	const pub = "; " + notePublic
	tests := []struct {
		allow, deny []string
		addrs       string
		port        int
		dial        string // the addresses to dial, if admitted
		err, rule   string // the refusal and the deny entry behind it
	}{
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.10", dial: "203.0.113.10"},
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.10 198.51.100.1", dial: "203.0.113.10 198.51.100.1"},
		{allow: []string{"0.0.0.0/0"}, addrs: "::ffff:203.0.113.10", dial: "203.0.113.10"},
		// Not public, alone or among public ones, whatever else is listed.
		{allow: []string{"0.0.0.0/0", "10.0.0.0/8"}, addrs: "10.1.2.3",
			err: "n.test resolves to private address 10.1.2.3" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.10 10.1.2.3",
			err: "n.test resolves to private address 10.1.2.3" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "10.1.2.3 203.0.113.10",
			err: "n.test resolves to private address 10.1.2.3" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.10 127.0.0.1",
			err: "n.test resolves to loopback address 127.0.0.1" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "169.254.169.254", err: "n.test resolves to metadata address 169.254.169.254" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "100.64.0.1", err: "n.test resolves to cgnat address 100.64.0.1" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "224.0.0.1", err: "n.test resolves to multicast address 224.0.0.1" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "0.0.0.0", err: "n.test resolves to unspecified address 0.0.0.0" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "::ffff:10.1.2.3", err: "n.test resolves to private address 10.1.2.3" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.77", err: "n.test resolves to host's own address 203.0.113.77" + pub},
		{allow: []string{"::/0"}, addrs: "64:ff9b::a01:203", err: "n.test resolves to nat64-embedded-private address 64:ff9b::a01:203" + pub},
		{allow: []string{"0.0.0.0/0"}, addrs: "203.0.113.10 fd00::1", err: "n.test resolves to unique-local address fd00::1" + pub},
		// A family no entry covers is not dialed.
		{allow: []string{"0.0.0.0/0"}, addrs: "2001:db8::1 203.0.113.10", dial: "203.0.113.10"},
		{allow: []string{"0.0.0.0/0", "::/0"}, addrs: "2001:db8::1 203.0.113.10", dial: "2001:db8::1 203.0.113.10"},
		{allow: []string{"0.0.0.0/0"}, addrs: "2001:db8::1",
			err: `n.test resolves to IPv6 address 2001:db8::1; no allow entry lists the whole IPv6 internet ("::/0") for port 443`},
		{allow: []string{"0.0.0.0/0", "[::/0]:8443"}, addrs: "2001:db8::1",
			err: `n.test resolves to IPv6 address 2001:db8::1; no allow entry lists the whole IPv6 internet ("::/0") for port 443`},
		{allow: []string{"0.0.0.0/0", "[::/0]:8443"}, addrs: "2001:db8::1 203.0.113.10", port: 8443, dial: "2001:db8::1"},
		// Deny wins, for any address of the name.
		{allow: []string{"0.0.0.0/0"}, deny: []string{"203.0.113.0/24"}, addrs: "198.51.100.1 203.0.113.10",
			err: `n.test resolves to denied address 203.0.113.10; denied by rule "203.0.113.0/24"`, rule: "203.0.113.0/24"},
		{allow: []string{"0.0.0.0/0"}, deny: []string{"2001:db8::/32"}, addrs: "203.0.113.10 2001:db8::1",
			err: `n.test resolves to denied address 2001:db8::1; denied by rule "2001:db8::/32"`, rule: "2001:db8::/32"},
		{allow: []string{"0.0.0.0/0"}, deny: []string{"203.0.113.10:22"}, addrs: "203.0.113.10", dial: "203.0.113.10"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.allow, tt.deny, tt.addrs, tt.port), func(t *testing.T) {
			r := mustCompile(t, Policy{Mode: ModeAllowlist, Allow: tt.allow, Deny: tt.deny})
			port := tt.port
			if port == 0 {
				port = 443
			}
			if d := r.Match("n.test", noIP, port); !d.PublicOnly {
				t.Fatalf("Match = %+v, want a whole-internet decision", d)
			}
			var addrs []netip.Addr
			for _, a := range strings.Fields(tt.addrs) {
				addrs = append(addrs, netip.MustParseAddr(a))
			}
			got, err := p.admitPublic(r, "n.test", addrs, port)
			var gotErr, gotRule string
			if de, ok := addrDenied(err); ok {
				gotErr, gotRule = de.Error(), de.rule
			} else if err != nil {
				t.Fatalf("error %v is no address refusal", err)
			}
			if diff := cmp.Diff(tt.err+"|"+tt.rule, gotErr+"|"+gotRule); diff != "" {
				t.Errorf("refusal|rule (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.dial, joinAddrs(got)); diff != "" {
				t.Errorf("dialed (-want +got):\n%s", diff)
			}
			// The check on the socket agrees with the one before it.
			for _, a := range got {
				if err := p.checkInternet(r, "n.test", a, port); err != nil {
					t.Errorf("checkInternet(%s) = %v after admitPublic chose it", a, err)
				}
			}
		})
	}
}

// TestCheckInternetOnSocket: the check run on the socket being connected
// refuses what admitPublic would not dial, should a dial ever reach an
// address by another road.
func TestCheckInternetOnSocket(t *testing.T) {
	p := proxyWithHost(nil, "203.0.113.77")
	r := mustCompile(t, Policy{Mode: ModeAllowlist, Allow: []string{"0.0.0.0/0"}, Deny: []string{"198.51.100.0/24"}})
	for addr, want := range map[string]bool{
		"203.0.113.10": true, "2001:db8::1": false, "127.0.0.1": false, "10.1.2.3": false,
		"203.0.113.77": false, "198.51.100.1": false,
	} {
		if err := p.checkInternet(r, "n.test", netip.MustParseAddr(addr), 443); (err == nil) != want {
			t.Errorf("checkInternet(%s) = %v, want allowed %v", addr, err, want)
		}
	}
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}
