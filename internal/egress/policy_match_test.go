package egress

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var noIP netip.Addr

func mustCompile(t testing.TB, p Policy) *Rules {
	t.Helper()
	r, err := Compile(p)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", p, err)
	}
	return r
}

func TestMatch(t *testing.T) {
	r := mustCompile(t, Policy{
		Mode: ModeAllowlist,
		Allow: []string{
			"pypi.org", "*.pythonhosted.org", "api.openai.com:8443", "Mixed.Case.Example.",
			"*.evil.com", "ok.evil2.com",
			"203.0.113.0/24", "198.51.100.7:22", "[2001:db8::/32]:443", "2001:db8:1::7",
			"10.0.0.0/8",
		},
		Deny: []string{"*.evil.com", "bad.pythonhosted.org", "203.0.113.66", "evil2.com", "ok.evil2.com:8080"},
	})
	allow := func(rule string) Decision {
		return Decision{Allowed: true, List: "allow", Rule: rule, Reason: `matched allow rule "` + rule + `"`}
	}
	deny := func(rule string) Decision {
		return Decision{List: "deny", Rule: rule, Reason: `denied by rule "` + rule + `"`}
	}
	none := func(target string) Decision {
		return Decision{Reason: "no allow rule matches " + target}
	}
	tests := []struct {
		host string
		port int
		want Decision
	}{
		{"pypi.org", 443, allow("pypi.org")},
		{"pypi.org", 80, allow("pypi.org")},
		{"PyPI.org.", 443, allow("pypi.org")},
		{"pypi.org", 8080, none("pypi.org:8080")},
		{"www.pypi.org", 443, none("www.pypi.org:443")},
		{"notpypi.org", 443, none("notpypi.org:443")},
		{"files.pythonhosted.org", 443, allow("*.pythonhosted.org")},
		{"a.b.pythonhosted.org", 80, allow("*.pythonhosted.org")},
		{"pythonhosted.org", 443, none("pythonhosted.org:443")},
		{"xpythonhosted.org", 443, none("xpythonhosted.org:443")},
		{"files.pythonhosted.org", 22, none("files.pythonhosted.org:22")},
		{"api.openai.com", 8443, allow("api.openai.com:8443")},
		{"api.openai.com", 443, none("api.openai.com:443")},
		{"mixed.case.example", 443, allow("Mixed.Case.Example.")},
		// Deny wins, and a deny entry without a port denies every port.
		{"x.evil.com", 443, deny("*.evil.com")},
		{"x.evil.com", 22, deny("*.evil.com")},
		{"bad.pythonhosted.org", 443, deny("bad.pythonhosted.org")},
		{"good.pythonhosted.org", 443, allow("*.pythonhosted.org")},
		{"ok.evil2.com", 443, allow("ok.evil2.com")}, // deny "evil2.com" is exact, not a suffix
		// IP rules match IP literals only.
		{"203.0.113.9", 443, allow("203.0.113.0/24")},
		{"203.0.113.9", 8080, none("203.0.113.9:8080")},
		{"203.0.113.66", 443, deny("203.0.113.66")},
		{"198.51.100.7", 22, allow("198.51.100.7:22")},
		{"198.51.100.7", 443, none("198.51.100.7:443")},
		{"0xcb.0.113.9", 443, allow("203.0.113.0/24")},
		{"::ffff:203.0.113.9", 443, allow("203.0.113.0/24")},
		{"[2001:db8:ffff::1]", 443, allow("[2001:db8::/32]:443")},
		{"2001:db8:ffff::1", 80, none("[2001:db8:ffff::1]:80")},
		{"2001:db8:1::7", 80, allow("2001:db8:1::7")},
		{"10.1.2.3", 443, allow("10.0.0.0/8")}, // Forbidden is the proxy's check
		{"2001:db9::1", 443, none("[2001:db9::1]:443")},
	}
	for _, tt := range tests {
		name, ip, err := ParseHost(tt.host)
		if err != nil {
			t.Fatalf("ParseHost(%q): %v", tt.host, err)
		}
		if name == "" {
			name = tt.host // a literal must match by ip even when name is set
		}
		if diff := cmp.Diff(tt.want, r.Match(name, ip, tt.port)); diff != "" {
			t.Errorf("Match(%q, %v, %d) (-want +got):\n%s", name, ip, tt.port, diff)
		}
	}
}

// TestMatchNameNeverMatchesIPRule pins that a name is judged by name rules
// only, what it resolves to being up to a resolver the sandbox may
// control; the one exception, whole-internet entries, is
// TestMatchWholeInternet's.
func TestMatchNameNeverMatchesIPRule(t *testing.T) {
	r := mustCompile(t, Policy{Mode: ModeAllowlist, Allow: []string{"1.2.3.0/24", "0.0.0.0/1", "128.0.0.0/1", "2001:db8::/32", "::/1"}})
	for _, name := range []string{"localhost", "example.com", "127.0.0.1.nip.io"} {
		if d := r.Match(name, noIP, 443); d.Allowed {
			t.Errorf("Match(%q) = %+v, want denied", name, d)
		}
	}
	r = mustCompile(t, Policy{Mode: ModeAllowlist, Allow: []string{"localhost", "*.nip.io"}})
	for _, ip := range []string{"127.0.0.1", "::1"} {
		if d := r.Match("localhost", netip.MustParseAddr(ip), 443); d.Allowed {
			t.Errorf("Match(%s) = %+v, want denied", ip, d)
		}
	}
}

// TestMatchWholeInternet: "0.0.0.0/0" and "::/0" admit a name no name rule
// allows, on condition (PublicOnly) that the proxy finds every address it
// resolves to public; deny entries still win, name rules still decide
// first, only those two entries count, and their ports apply.
func TestMatchWholeInternet(t *testing.T) {
	r := mustCompile(t, Policy{
		Mode:  ModeAllowlist,
		Allow: []string{"api.test:8080", "0.0.0.0/0", "[::/0]:8443", "1.2.3.0/24:22"},
		Deny:  []string{"bad.test", "*.evil.test", "1.2.3.66"},
	})
	public := func(rule string) Decision {
		return Decision{Allowed: true, List: "allow", Rule: rule, PublicOnly: true,
			Reason: `matched allow rule "` + rule + `", if every address of the name is public`}
	}
	allow := func(rule string) Decision {
		return Decision{Allowed: true, List: "allow", Rule: rule, Reason: `matched allow rule "` + rule + `"`}
	}
	deny := func(rule string) Decision {
		return Decision{List: "deny", Rule: rule, Reason: `denied by rule "` + rule + `"`}
	}
	none := func(target string) Decision { return Decision{Reason: "no allow rule matches " + target} }
	tests := []struct {
		host string
		port int
		want Decision
	}{
		{"example.com", 443, public("0.0.0.0/0")},
		{"Example.COM.", 80, public("0.0.0.0/0")},
		{"example.com", 8443, public("[::/0]:8443")},
		{"example.com", 8080, none("example.com:8080")},
		{"example.com", 22, none("example.com:22")}, // "1.2.3.0/24:22" is no name rule
		{"api.test", 8080, allow("api.test:8080")},  // a name rule decides first
		{"api.test", 443, public("0.0.0.0/0")},
		{"bad.test", 443, deny("bad.test")},
		{"x.evil.test", 8443, deny("*.evil.test")},
		{"localhost", 443, none("localhost:443")}, // never public (RFC 6761)
		{"a.localhost", 443, none("a.localhost:443")},
		// An IP literal is matched as before: no condition.
		{"1.2.3.4", 443, allow("0.0.0.0/0")},
		{"1.2.3.4", 22, allow("1.2.3.0/24:22")},
		{"1.2.3.66", 443, deny("1.2.3.66")},
		{"2001:db8::1", 8443, allow("[::/0]:8443")},
		{"2001:db8::1", 443, none("[2001:db8::1]:443")},
	}
	for _, tt := range tests {
		name, ip, err := ParseHost(tt.host)
		if err != nil {
			t.Fatalf("ParseHost(%q): %v", tt.host, err)
		}
		if diff := cmp.Diff(tt.want, r.Match(name, ip, tt.port)); diff != "" {
			t.Errorf("Match(%q, %d) (-want +got):\n%s", tt.host, tt.port, diff)
		}
	}
	// The log names the entry of the family dialed.
	both := mustCompile(t, allowlist("::/0", "0.0.0.0/0"))
	d := both.Match("example.com", noIP, 443)
	for addr, want := range map[string]string{"203.0.113.1": "0.0.0.0/0", "::ffff:203.0.113.1": "0.0.0.0/0", "2001:db8::1": "::/0"} {
		if got := both.dialedRule(d, netip.MustParseAddr(addr), 443); got != want {
			t.Errorf("dialedRule(%s) = %q, want %q", addr, got, want)
		}
	}
	lit := netip.MustParseAddr("2001:db8::1")
	if got := both.dialedRule(both.Match("", lit, 443), lit, 443); got != "::/0" {
		t.Errorf("dialedRule for a literal = %q, want the rule Match named", got)
	}
}

func TestMatchModeNone(t *testing.T) {
	want := Decision{Reason: "network mode is none"}
	var nilRules *Rules
	for _, r := range []*Rules{mustCompile(t, Policy{}), mustCompile(t, Policy{Mode: ModeNone, Deny: []string{"x.test"}}), nilRules} {
		for _, tt := range []struct {
			name string
			ip   netip.Addr
		}{{"pypi.org", noIP}, {"", netip.MustParseAddr("203.0.113.1")}} {
			if diff := cmp.Diff(want, r.Match(tt.name, tt.ip, 443)); diff != "" {
				t.Errorf("Match(%q, %v) (-want +got):\n%s", tt.name, tt.ip, diff)
			}
		}
		if r.AllowsIP(netip.MustParseAddr("203.0.113.1"), 443) {
			t.Error("AllowsIP in mode none = true")
		}
	}
}

func TestMatchEmptyAllowlist(t *testing.T) {
	r := mustCompile(t, Policy{Mode: ModeAllowlist})
	want := Decision{Reason: "no allow rule matches denied.test:443"}
	if diff := cmp.Diff(want, r.Match("denied.test", noIP, 443)); diff != "" {
		t.Errorf("Match (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Decision{Reason: "no host to match"}, r.Match("", noIP, 443)); diff != "" {
		t.Errorf("Match empty (-want +got):\n%s", diff)
	}
}

func TestAllowsIP(t *testing.T) {
	r := mustCompile(t, Policy{
		Mode: ModeAllowlist,
		Allow: []string{
			"0.0.0.0/0", "::/0", // the internet: opens no forbidden block
			"10.0.0.0/8", "172.16.5.0/24:5432", "169.254.0.0/16", "127.0.0.1:8080",
			"fd00::/8", "100.100.100.200", "203.0.113.0/24",
			"internal.corp", // a name: never opens an address
		},
		Deny: []string{"10.9.0.0/16", "10.8.0.1:22"},
	})
	tests := []struct {
		ip   string
		port int
		want bool
	}{
		{"10.1.2.3", 443, true},
		{"10.1.2.3", 22, false}, // no port on the rule: 80 and 443 only
		{"10.9.1.1", 443, false},
		{"10.8.0.1", 443, true},
		{"10.8.0.1", 22, false},
		{"172.16.5.9", 5432, true},
		{"172.16.5.9", 443, false},
		{"172.16.6.9", 5432, false},
		{"169.254.1.1", 443, true},
		{"169.254.169.254", 80, false}, // metadata needs its own rule
		{"100.100.100.200", 80, true},  // ...which it has here
		{"100.64.0.1", 80, false},      // cgnat only under 0.0.0.0/0
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 443, false},
		{"127.0.0.2", 8080, false},
		{"::ffff:10.1.2.3", 443, true},
		{"::1", 443, false},
		{"fd12::1", 443, true},
		{"fd00:ec2::254", 80, false},
		{"fe80::1", 443, false},
		{"203.0.113.5", 443, true},
		{"198.51.100.1", 443, true}, // not forbidden: 0.0.0.0/0 covers it
		{"2001:db8::1", 443, true},
	}
	for _, tt := range tests {
		if got := r.AllowsIP(netip.MustParseAddr(tt.ip), tt.port); got != tt.want {
			t.Errorf("AllowsIP(%s, %d) = %v, want %v", tt.ip, tt.port, got, tt.want)
		}
	}
	if r.AllowsIP(noIP, 443) {
		t.Error("AllowsIP(invalid) = true")
	}
}
