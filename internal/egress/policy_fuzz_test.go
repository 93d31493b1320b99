package egress

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzCompile feeds random policies (entries separated by newlines) and
// random targets. Compile must never panic; a policy it accepts must match
// anything without panicking and survive a round trip through Policy.
func FuzzCompile(f *testing.F) {
	f.Add("allowlist", "pypi.org\n*.pythonhosted.org\napi.openai.com:443", "*.evil.com", "files.pythonhosted.org", 443)
	f.Add("allowlist", "203.0.113.0/24\n[2001:db8::/32]:443\n10.0.0.0/8", "10.9.0.0/16", "0x0a.1", 80)
	f.Add("allowlist", "0.0.0.0/0\n::/0", "", "::ffff:127.0.0.1", 8080)
	f.Add("allowlist", "0.0.0.0/0\n[::/0]:8443", "bad.test\n203.0.113.0/24", "example.com", 8443)
	f.Add("", "", "evil.test", "evil.test", 0)
	f.Add("none", "x.test", "", "x.test", 443)
	f.Add("allowlist", "*.\n*\na*.b\n0x7f.1", "10.0.0.1/8", "[::1]", -1)
	f.Add("allowlist", "PyPI.org.\nlocalhost:65535", "*.Evil.Com.:22", "PYPI.ORG", 65536)
	f.Fuzz(func(t *testing.T, mode, allow, deny, host string, port int) {
		p := Policy{Mode: Mode(mode), Allow: split(allow), Deny: split(deny)}
		r, err := Compile(p)
		if err != nil {
			var pe *PatternError
			if errors.As(err, &pe) {
				list := p.Allow
				if pe.List == "deny" {
					list = p.Deny
				}
				if pe.Index < 0 || pe.Index >= len(list) || list[pe.Index] != pe.Entry || pe.Reason == "" {
					t.Fatalf("Compile: %#v does not point at an entry of %q", pe, list)
				}
			}
			return
		}
		got := r.Policy()
		r2, err := Compile(got)
		if err != nil {
			t.Fatalf("Compile(%+v) = %v after Compile(%+v) accepted it", got, err, p)
		}
		if diff := cmp.Diff(got, r2.Policy()); diff != "" {
			t.Fatalf("Policy() round trip (-first +second):\n%s", diff)
		}

		name, ip, perr := ParseHost(host)
		for _, d := range []Decision{r.Match(host, ip, port), r.Match(name, ip, port)} {
			checkDecision(t, got, d)
			if d.PublicOnly {
				// Only a whole-family entry admits on condition, and only a name.
				a, reason := parseEntry(d.Rule)
				if !d.Allowed || ip.IsValid() || reason != "" || a.kind != ruleIP || a.prefix.Bits() != 0 {
					t.Fatalf("Match(%q, %d) = %+v: a condition without a whole-internet entry", host, port, d)
				}
			}
			if d.Allowed && perr == nil && ip.IsValid() && !r.AllowsIP(ip, port) {
				if forbidden, _ := Forbidden(ip); !forbidden {
					t.Fatalf("Match(%v:%d) allowed but AllowsIP refuses a public address: %+v", ip, port, d)
				}
			}
		}
		if ip.IsValid() && r.AllowsIP(ip, port) && !r.Match("", ip, port).Allowed {
			t.Fatalf("AllowsIP(%v, %d) but Match denies it", ip, port)
		}
	})
}

// checkDecision checks that d is consistent with the policy that made it.
func checkDecision(t *testing.T, p Policy, d Decision) {
	t.Helper()
	switch {
	case d.Reason == "":
		t.Fatalf("decision without a reason: %+v", d)
	case d.Allowed && (d.List != "allow" || !slices.Contains(p.Allow, d.Rule)):
		t.Fatalf("allowed by %q, which is not an allow entry of %+v", d.Rule, p)
	case !d.Allowed && d.List == "deny" && !slices.Contains(p.Deny, d.Rule):
		t.Fatalf("denied by %q, which is not a deny entry of %+v", d.Rule, p)
	case !d.Allowed && d.List == "" && d.Rule != "":
		t.Fatalf("default deny names a rule: %+v", d)
	case d.Allowed && p.Mode != ModeAllowlist:
		t.Fatalf("allowed in mode %q: %+v", p.Mode, d)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
