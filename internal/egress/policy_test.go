package egress

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompileBadEntry(t *testing.T) {
	long := strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." +
		strings.Repeat("d", 60) + "." + strings.Repeat("e", 60) + ".com"
	tests := []struct {
		entry  string
		reason string
	}{
		{"", "empty entry"},
		{long, "entry is longer than 300 bytes"},
		{" pypi.org", "entry contains whitespace or a control character"},
		{"pypi.org\n", "entry contains whitespace or a control character"},
		{"https://pypi.org", `a URL scheme is not allowed; write the host only, as in "example.com"`},
		{"user@pypi.org", "userinfo (user@) is not allowed; write the host only"},
		{"pypi.org/simple", "a path is not allowed; write the host only"},
		{"*.pypi.org/simple", "a path is not allowed; write the host only"},
		{"pypi.org/x:443", "a path is not allowed; write the host only"},
		{"*.", `wildcard needs a domain after "*."`},
		{"*..", `wildcard needs a domain after "*."`},
		{"*", `"*" alone would allow every host; list the domains instead, or "0.0.0.0/0" and "::/0" for every public address and name`},
		{"*:443", `"*" alone would allow every host; list the domains instead, or "0.0.0.0/0" and "::/0" for every public address and name`},
		{"*.*", `"*" is only allowed as the whole first label, as in "*.example.com"`},
		{"**.x.com", `"*" is only allowed as the whole first label, as in "*.example.com"`},
		{"a*.b.com", `"*" is only allowed as the whole first label, as in "*.example.com"`},
		{"a.*.com", `"*" is only allowed as the whole first label, as in "*.example.com"`},
		{"*.10.0.0.1", `wildcard needs a domain after "*.", not an IP address`},
		{"*.999", `wildcard needs a domain after "*.", not an IP address`},
		{"*.-x.com", "a label cannot start or end with a hyphen"},
		{"pypi.org:*", `port "*" is not allowed; write one entry per port, or no port for 80 and 443`},
		{"pypi.org:", `empty port after ":"`},
		{"pypi.org:0", "port must be a number from 1 to 65535, without sign or leading zeros"},
		{"pypi.org:65536", "port must be a number from 1 to 65535, without sign or leading zeros"},
		{"pypi.org:0443", "port must be a number from 1 to 65535, without sign or leading zeros"},
		{"pypi.org:+443", "port must be a number from 1 to 65535, without sign or leading zeros"},
		{"pypi.org:https", "port must be a number from 1 to 65535, without sign or leading zeros"},
		{":443", "empty host"},
		{"pypi..org", "name has an empty label"},
		{"pypi.org..", "name has an empty label"},
		{"-pypi.org", "a label cannot start or end with a hyphen"},
		{"pyp!.org", `invalid character '!' in name`},
		{"pypi.org?x", `invalid character '?' in name`},
		{strings.Repeat("a", 64) + ".com", "name has a label longer than 63 bytes"},
		{"bücher.de", "non-ASCII character; write internationalized names in their xn-- form"},
		{"0x7f.1", `write IP addresses in canonical form: "0x7f.1" means "127.0.0.1"`},
		{"2130706433", `write IP addresses in canonical form: "2130706433" means "127.0.0.1"`},
		{"010.0.0.1", `write IP addresses in canonical form: "010.0.0.1" means "8.0.0.1"`},
		{"127.0.0.1.", `write IP addresses in canonical form: "127.0.0.1." means "127.0.0.1"`},
		{"0x0a.0.0.0/8", `write IP addresses in canonical form: "0x0a.0.0.0" means "10.0.0.0"`},
		{"1.2.3.4.5", "not a valid IPv4 address, and a name cannot end in a numeric label"},
		{"999.1.1.1", "not a valid IPv4 address, and a name cannot end in a numeric label"},
		{"999.1.1.1/8", "not a valid IP address"},
		{"10.0.0.1/8", `CIDR block has host bits set; did you mean "10.0.0.0/8"?`},
		{"10.0.0.0/33", `invalid CIDR block; want address/bits with bits 0..32, as in "10.0.0.0/8"`},
		{"2001:db8::1/32", `CIDR block has host bits set; did you mean "2001:db8::/32"?`},
		{"2001:db8::/129", `invalid IPv6 CIDR block; want address/bits, as in "2001:db8::/32"`},
		{"[10.0.0.1]:443", "brackets are only for IPv6 addresses"},
		{"[2001:db8::1", `missing "]" after IPv6 address`},
		{"[2001:db8::1]443", `unexpected text after "]"; want "]:port"`},
		{"[fe80::1%eth0]:443", "IPv6 zones are not allowed"},
		{"fe80::1%eth0", "IPv6 zones are not allowed"},
		{"2001:db8::g", `invalid IPv6 address; write a port as "[2001:db8::1]:443"`},
		{"::ffff:127.0.0.1", `write IPv4-mapped addresses in IPv4 form, as in "127.0.0.1"`},
		{"[::ffff:10.0.0.0/104]:443", `write IPv4-mapped addresses in IPv4 form, as in "10.0.0.0"`},
	}
	for _, tt := range tests {
		for _, list := range []string{"allow", "deny"} {
			t.Run(list+"/"+tt.entry, func(t *testing.T) {
				p := Policy{Mode: ModeAllowlist}
				entries := []string{"good.example", "203.0.113.0/24", tt.entry}
				if list == "allow" {
					p.Allow = entries
				} else {
					p.Deny = entries
				}
				_, err := Compile(p)
				var got *PatternError
				if !errors.As(err, &got) {
					t.Fatalf("Compile(%q) = %v, want a *PatternError", tt.entry, err)
				}
				want := &PatternError{List: list, Index: 2, Entry: tt.entry, Reason: tt.reason}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Compile(%q) error (-want +got):\n%s", tt.entry, diff)
				}
			})
		}
	}
}

func TestCompileGoodEntry(t *testing.T) {
	good := []string{
		"pypi.org", "PyPI.org.", "*.pythonhosted.org", "*.com", "_acme.example.com",
		"api.openai.com:443", "localhost:8080", "xn--bcher-kva.de",
		"203.0.113.7", "203.0.113.0/24", "0.0.0.0/0", "203.0.113.7/32:8080", "203.0.113.7:22",
		"2001:db8::1", "2001:DB8::/32", "::/0", "[2001:db8::1]:443", "[2001:db8::/32]:443", "[2001:db8::1]",
		"2001:db8::1:443", // an address, not a port: ports on IPv6 need brackets
	}
	for _, e := range good {
		if _, err := Compile(Policy{Mode: ModeAllowlist, Allow: []string{e}, Deny: []string{e}}); err != nil {
			t.Errorf("Compile(%q): %v", e, err)
		}
	}
}

func TestCompileMode(t *testing.T) {
	tests := []struct {
		name    string
		in      Policy
		want    Policy
		wantErr string
	}{
		{name: "empty is none", in: Policy{}, want: Policy{Mode: ModeNone}},
		{name: "none keeps deny", in: Policy{Mode: ModeNone, Deny: []string{"evil.test"}},
			want: Policy{Mode: ModeNone, Deny: []string{"evil.test"}}},
		{name: "empty lists become nil", in: Policy{Mode: ModeAllowlist, Allow: []string{}, Deny: []string{}},
			want: Policy{Mode: ModeAllowlist}},
		{name: "entries as given", in: Policy{Mode: ModeAllowlist, Allow: []string{"PyPI.org.", "*.X.com:8443"}},
			want: Policy{Mode: ModeAllowlist, Allow: []string{"PyPI.org.", "*.X.com:8443"}}},
		{name: "none with allow", in: Policy{Allow: []string{"pypi.org"}},
			wantErr: `network.allow[0] "pypi.org": network mode "none" allows nothing; set mode "allowlist" to use allow entries`},
		{name: "unknown mode", in: Policy{Mode: "open"},
			wantErr: `network.mode "open": unknown mode, want "none" or "allowlist"`},
		{name: "mode is case-sensitive", in: Policy{Mode: "Allowlist"},
			wantErr: `network.mode "Allowlist": unknown mode, want "none" or "allowlist"`},
		{name: "too many allow", in: Policy{Mode: ModeAllowlist, Allow: numbered(257)},
			wantErr: `network.allow[256] "h256.example": more than 256 entries`},
		{name: "too many deny", in: Policy{Mode: ModeAllowlist, Deny: numbered(300)},
			wantErr: `network.deny[256] "h256.example": more than 256 entries`},
		{name: "256 is fine", in: Policy{Mode: ModeAllowlist, Allow: numbered(256)},
			want: Policy{Mode: ModeAllowlist, Allow: numbered(256)}},
		{name: "long entry cut in message", in: Policy{Mode: ModeAllowlist, Allow: []string{strings.Repeat("x", 400)}},
			wantErr: `network.allow[0] "` + strings.Repeat("x", 80) + `"...: entry is longer than 300 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compile(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Compile error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if diff := cmp.Diff(tt.want, r.Policy()); diff != "" {
				t.Errorf("Policy() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRulesImmutable pins that neither the caller's slices nor the returned
// policy alias the compiled rules.
func TestRulesImmutable(t *testing.T) {
	allow := []string{"pypi.org"}
	r, err := Compile(Policy{Mode: ModeAllowlist, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	allow[0] = "evil.test"
	r.Policy().Allow[0] = "evil.test"
	if diff := cmp.Diff(Policy{Mode: ModeAllowlist, Allow: []string{"pypi.org"}}, r.Policy()); diff != "" {
		t.Errorf("Policy() changed (-want +got):\n%s", diff)
	}
	if d := r.Match("evil.test", noIP, 443); d.Allowed {
		t.Errorf("Match(evil.test) = %+v after mutating the input", d)
	}
}

func TestPatternErrorMessage(t *testing.T) {
	err := error(&PatternError{List: "allow", Index: 2, Entry: "*.", Reason: reasonWildcardDomain})
	want := `network.allow[2] "*.": wildcard needs a domain after "*."`
	if err.Error() != want {
		t.Errorf("Error() = %s, want %s", err, want)
	}
}

func numbered(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("h%d.example", i)
	}
	return s
}
