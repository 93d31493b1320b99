package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// proxyWithHost is a proxy whose host has exactly the addresses own (and
// keeps them: the cache never expires during the test), opening open.
func proxyWithHost(open []string, own ...string) *Proxy {
	p := New(Config{})
	for _, o := range open {
		p.cfg.AllowPrivate = append(p.cfg.AllowPrivate, netip.MustParsePrefix(o))
	}
	p.host.addrs = map[netip.Addr]bool{}
	for _, a := range own {
		p.host.addrs[netip.MustParseAddr(a)] = true
	}
	p.host.fetched = time.Now().Add(time.Hour)
	return p
}

// TestTenantEntryForForbiddenAddressIsRefused: an allow entry that names
// only addresses a sandbox may never reach is an error naming the entry
// and the range, in every spelling a tenant could try; wider entries are
// accepted (the dial check holds them to public addresses).
func TestTenantEntryForForbiddenAddressIsRefused(t *testing.T) {
	const hostOwn = "203.0.113.77" // a public address the host has on an interface
	tests := []struct {
		entry string
		want  string // in the error; "" accepted
	}{
		// Loopback, and the daemon's own API on it.
		{"127.0.0.1:7491", "127.0.0.1 is a loopback address (127.0.0.0/8)"},
		{"127.0.0.1", "loopback"},
		{"127.0.0.0/8", "127.0.0.0/8 lies in the loopback range 127.0.0.0/8"},
		{"127.5.0.0/16:22", "loopback"},
		{"[::1]:7070", "::1 is a loopback address"},
		{"::1", "loopback"},
		// Spellings a resolver reads as loopback: refused by the syntax,
		// naming what they mean.
		{"127.1", `"127.1" means "127.0.0.1"`},
		{"0x7f.0.0.1", `means "127.0.0.1"`},
		{"2130706433", `means "127.0.0.1"`},
		{"0177.0.0.1", `means "127.0.0.1"`},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"[::ffff:7f00:1]:80", "IPv4-mapped"},
		{"::7f00:1", "loopback"}, // IPv4-compatible
		{"64:ff9b::7f00:1", "nat64-embedded-loopback"},
		{"[64:ff9b::127.0.0.1]:8080", "nat64-embedded-loopback"},
		{"64:ff9b::a00:0/104", "nat64-embedded-private"},
		{"2002:7f00:1::/48", "6to4-embedded-loopback"},
		{"fe80::1%eth0", "zones"},
		{"[::1%lo]:80", "zones"},
		{"127.0.0.1.", `"127.0.0.1." means "127.0.0.1"`},
		// Names that are loopback by definition (RFC 6761).
		{"localhost", "localhost names loopback"},
		{"localhost:7070", "loopback"},
		{"LocalHost.", "loopback"},
		{"api.localhost", "api.localhost names loopback"},
		{"*.localhost", "loopback"},
		// Link-local and metadata, private, CGNAT, multicast, reserved.
		{"169.254.169.254", "169.254.169.254 is a metadata address (169.254.169.254/32)"},
		{"169.254.169.254:80", "metadata"},
		{"[fd00:ec2::254]:80", "metadata"},
		{"100.100.100.200", "metadata"},
		{"169.254.0.0/16", "link-local"},
		{"fe80::/10", "link-local"},
		{"10.0.0.0/8", "10.0.0.0/8 lies in the private range 10.0.0.0/8"},
		{"10.1.2.3:5432", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.1.0/24", "private"},
		{"fc00::/7", "fc00::/7 lies in the unique-local range"},
		{"fd12:3456::1", "unique-local"},
		{"100.64.0.0/10", "cgnat"},
		{"224.0.0.0/4", "multicast"},
		{"ff02::1", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"224.0.0.0/3", "holds only forbidden addresses"}, // multicast and reserved together
		{"255.255.255.255", "broadcast"},
		{"0.0.0.0", "unspecified"},
		{"0.0.0.0/8", "holds only forbidden addresses"},
		{"::", "unspecified"},
		{"198.18.0.0/15", "benchmarking"},
		{"192.0.0.0/24", "reserved"},
		// The host's own address, however public it looks.
		{hostOwn, hostOwn + " is one of this host's own addresses"},
		{hostOwn + ":7070", "host's own"},
		// Wide entries hold public addresses too: accepted, and never
		// open the rest.
		{"0.0.0.0/0", ""},
		{"0.0.0.0/0:7070", ""},
		{"::/0", ""},
		{"[::/0]:443", ""},
		{"8.0.0.0/6", ""},    // holds 10.0.0.0/8 and public 8/8, 9/8, 11/8
		{"10.0.0.0/7", ""},   // 10/8 and public 11/8
		{"100.0.0.0/8", ""},  // holds part of CGNAT
		{"64:ff9b::/96", ""}, // NAT64 of the whole IPv4 internet
		{"2002::/16", ""},
		{"203.0.113.0/24", ""}, // holds hostOwn and others
		{"203.0.113.7", ""},
		{"2001:db8::1", ""},
		{"pypi.org", ""},
		{"*.example.com", ""},
		{"localhost.example.com", ""}, // an ordinary name
	}
	p := proxyWithHost(nil, hostOwn)
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			err := p.CheckReach(allowlist("pypi.org", tt.entry))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckReach: %v, want accepted", err)
				}
				return
			}
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("CheckReach: %v, want a *PatternError", err)
			}
			if pe.List != "allow" || pe.Index != 1 || pe.Entry != tt.entry || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckReach: %v (%+v), want allow[1] naming %q", err, pe, tt.want)
			}
			if !strings.Contains(err.Error(), `network.allow[1] "`) {
				t.Errorf("error %q does not name the field", err)
			}
		})
	}
}

// TestOperatorOpensChosenRanges: what --egress-allow-private opens, a
// tenant may list; loopback and the host's own addresses only where the
// operator named the address itself; deny entries are never refused.
func TestOperatorOpensChosenRanges(t *testing.T) {
	p := proxyWithHost([]string{"10.0.0.0/8", "127.0.0.1/32", "169.254.0.0/16", "10.0.0.5/32"}, "10.0.0.5", "10.0.0.6", "127.0.0.1")
	tests := []struct {
		entry string
		ok    bool
	}{
		{"10.1.2.3:5432", true},
		{"10.0.0.0/8", true},
		{"10.0.0.0/16", true},
		{"10.0.0.5:7070", true},  // the host's own, named by the operator
		{"10.0.0.6:7070", false}, // the host's own, inside 10/8 but not named
		{"127.0.0.1:8080", true},
		{"127.0.0.2:8080", false},
		{"127.0.0.0/8", true}, // reaches the one address opened
		{"127.1.0.0/16", false},
		{"169.254.1.1", true},
		{"169.254.169.254", false}, // metadata is not link-local's to open
		{"192.168.0.1", false},
	}
	for _, tt := range tests {
		err := p.CheckReach(allowlist(tt.entry))
		if (err == nil) != tt.ok {
			t.Errorf("CheckReach(%q) = %v, want ok %v", tt.entry, err, tt.ok)
		}
	}
	if err := p.CheckReach(Policy{Mode: ModeAllowlist, Deny: []string{"127.0.0.0/8", "192.168.0.0/16", "localhost"}}); err != nil {
		t.Errorf("deny entries: %v", err)
	}
}

// TestReachableNeedsOperatorAndRule pins the dial check: a forbidden
// address is dialed only when the operator opened it and a tenant's IP
// rule lists it, never for a tenant's rule alone, however it is written.
func TestReachableNeedsOperatorAndRule(t *testing.T) {
	rules := mustCompile(t, allowlist("0.0.0.0/0:8080", "[::/0]:8080", "127.0.0.1:8080", "10.0.0.0/8:8080",
		"203.0.113.77:8080", "169.254.169.254:8080", "[::1]:8080", "[64:ff9b::7f00:1]:8080"))
	type result struct {
		OK  bool
		Why string
	}
	tests := []struct {
		ip   string
		open []string
		want result
	}{
		{"127.0.0.1", nil, result{false, "loopback"}},
		{"127.0.0.2", nil, result{false, "loopback"}},
		{"::1", nil, result{false, "loopback"}},
		{"::ffff:127.0.0.1", nil, result{false, "loopback"}},
		{"64:ff9b::7f00:1", nil, result{false, "nat64-embedded-loopback"}},
		{"10.1.2.3", nil, result{false, "private"}},
		{"169.254.169.254", nil, result{false, "metadata"}},
		{"203.0.113.77", nil, result{false, "host's own"}},
		{"203.0.113.78", nil, result{true, ""}}, // public: the wide rule covers it
		{"127.0.0.1", []string{"127.0.0.1/32"}, result{true, ""}},
		{"127.0.0.2", []string{"127.0.0.1/32"}, result{false, "loopback"}},
		{"10.1.2.3", []string{"10.0.0.0/8"}, result{true, ""}},
		{"10.1.2.3", []string{"10.1.0.0/16"}, result{true, ""}},
		{"169.254.169.254", []string{"169.254.0.0/16"}, result{false, "metadata"}},
		{"203.0.113.77", []string{"203.0.113.0/24"}, result{false, "host's own"}},
		{"203.0.113.77", []string{"203.0.113.77/32"}, result{true, ""}},
	}
	for _, tt := range tests {
		p := proxyWithHost(tt.open, "203.0.113.77", "127.0.0.1")
		ok, why := p.reachable(rules, netip.MustParseAddr(tt.ip), 8080)
		if diff := cmp.Diff(tt.want, result{ok, why}); diff != "" {
			t.Errorf("reachable(%s) with %v opened (-want +got):\n%s", tt.ip, tt.open, diff)
		}
	}
	// Opened, but no rule of the tenant lists it: the operator's word
	// alone does not add to a sandbox's allow-list.
	p := proxyWithHost([]string{"10.0.0.0/8"})
	if ok, _ := p.reachable(mustCompile(t, allowlist("0.0.0.0/0:8080")), netip.MustParseAddr("10.1.2.3"), 8080); ok {
		t.Error("10.1.2.3 reachable under 0.0.0.0/0 alone")
	}
}

func TestParseAllowPrivate(t *testing.T) {
	tests := []struct {
		in   string
		want string // the prefix, or a part of the error
		ok   bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", true},
		{"192.168.5.0/24", "192.168.5.0/24", true},
		{"172.16.0.0/12", "172.16.0.0/12", true},
		{"100.64.0.0/10", "100.64.0.0/10", true},
		{"169.254.0.0/16", "169.254.0.0/16", true},
		{"fd00::/8", "fd00::/8", true},
		{"127.0.0.1/32", "127.0.0.1/32", true},
		{"127.0.0.1", "127.0.0.1/32", true},
		{"::1", "::1/128", true},
		{"169.254.169.254", "169.254.169.254/32", true},
		{"203.0.113.77", "203.0.113.77/32", true}, // a host's own public address
		{"127.0.0.0/8", "name the one address", false},
		{"10.0.0.0/7", "wider than the private range 10.0.0.0/8", false},
		{"0.0.0.0/0", "wider than", false},
		{"8.8.0.0/16", "holds public addresses", false},
		{"10.0.0.1/8", `did you mean "10.0.0.0/8"`, false},
		{"::ffff:10.0.0.0/104", "IPv4 form", false},
		{"fe80::1%eth0", "zones", false},
		{"private", "want a CIDR block", false},
		{"", "want a CIDR block", false},
	}
	for _, tt := range tests {
		p, err := ParseAllowPrivate(tt.in)
		switch {
		case tt.ok && (err != nil || p.String() != tt.want):
			t.Errorf("ParseAllowPrivate(%q) = %v, %v; want %s", tt.in, p, err, tt.want)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ParseAllowPrivate(%q) = %v, %v; want an error with %q", tt.in, p, err, tt.want)
		}
	}
}
