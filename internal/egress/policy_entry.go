package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

type ruleKind uint8

const (
	ruleName   ruleKind = iota // name is the exact host
	ruleSuffix                 // name is ".example.com" from "*.example.com"
	ruleIP                     // prefix holds the address or block
)

// rule is one compiled entry of an allow or deny list.
type rule struct {
	entry  string // as written, for Decision.Rule
	kind   ruleKind
	name   string
	prefix netip.Prefix
	port   int // 0: no port written
}

const (
	reasonWildcardDomain = `wildcard needs a domain after "*."`
	reasonWildcardPlace  = `"*" is only allowed as the whole first label, as in "*.example.com"`
)

// parseEntry compiles one allow or deny entry, or returns why it is bad.
func parseEntry(e string) (rule, string) {
	switch {
	case e == "":
		return rule{}, "empty entry"
	case len(e) > maxEntryLen:
		return rule{}, fmt.Sprintf("entry is longer than %d bytes", maxEntryLen)
	}
	for i := 0; i < len(e); i++ {
		if e[i] <= ' ' || e[i] == 0x7f {
			return rule{}, "entry contains whitespace or a control character"
		}
	}
	switch {
	case strings.Contains(e, "://"):
		return rule{}, `a URL scheme is not allowed; write the host only, as in "example.com"`
	case strings.Contains(e, "@"):
		return rule{}, "userinfo (user@) is not allowed; write the host only"
	}
	host, portStr, hasPort, bracketed, reason := splitEntry(e)
	if reason != "" {
		return rule{}, reason
	}
	r := rule{entry: e}
	if hasPort {
		if r.port, reason = parsePort(portStr); reason != "" {
			return rule{}, reason
		}
	}
	switch {
	case bracketed || strings.Contains(host, ":"):
		reason = r.parseIPv6(host)
	case strings.Contains(host, "/"):
		reason = r.parseCIDR4(host)
	case strings.Contains(host, "*"):
		reason = r.parseWildcard(host)
	default:
		reason = r.parseHostEntry(host)
	}
	if reason != "" {
		return rule{}, reason
	}
	return r, ""
}

// splitEntry splits e into host and port. An IPv6 address or block takes a
// port only in brackets: in "2001:db8::1:443" the 443 is part of the
// address.
func splitEntry(e string) (host, port string, hasPort, bracketed bool, reason string) {
	if e[0] == '[' {
		end := strings.IndexByte(e, ']')
		if end < 0 {
			return "", "", false, false, `missing "]" after IPv6 address`
		}
		host, rest := e[1:end], e[end+1:]
		if rest == "" {
			return host, "", false, true, ""
		}
		if rest[0] != ':' {
			return "", "", false, false, `unexpected text after "]"; want "]:port"`
		}
		return host, rest[1:], true, true, ""
	}
	if strings.Count(e, ":") == 1 {
		host, port, _ := strings.Cut(e, ":")
		return host, port, true, false, ""
	}
	return e, "", false, false, ""
}

func parsePort(s string) (int, string) {
	switch {
	case s == "":
		return 0, `empty port after ":"`
	case s == "*":
		return 0, `port "*" is not allowed; write one entry per port, or no port for 80 and 443`
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, "port must be a number from 1 to 65535, without sign or leading zeros"
	}
	return n, ""
}

// parseIPv6 compiles an IPv6 address or block, bracketed or not.
func (r *rule) parseIPv6(host string) string {
	if !strings.Contains(host, ":") {
		return "brackets are only for IPv6 addresses"
	}
	if strings.Contains(host, "%") {
		return "IPv6 zones are not allowed"
	}
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil || !p.Addr().Is6() {
			return `invalid IPv6 CIDR block; want address/bits, as in "2001:db8::/32"`
		}
		return r.setPrefix(p)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() {
		return `invalid IPv6 address; write a port as "[2001:db8::1]:443"`
	}
	return r.setPrefix(netip.PrefixFrom(ip, 128))
}

// parseCIDR4 compiles an IPv4 block, or explains a path.
func (r *rule) parseCIDR4(host string) string {
	addr, _, _ := strings.Cut(host, "/")
	if _, ip, err := parseHost(addr); err != nil || !ip.IsValid() {
		if addr != "" && endsInNumber(lowerASCII(strings.TrimSuffix(addr, "."))) {
			return "not a valid IP address"
		}
		return "a path is not allowed; write the host only"
	}
	p, err := netip.ParsePrefix(host)
	if err != nil {
		if _, err := netip.ParseAddr(addr); err != nil {
			return canonicalReason(addr)
		}
		return `invalid CIDR block; want address/bits with bits 0..32, as in "10.0.0.0/8"`
	}
	return r.setPrefix(p)
}

func (r *rule) setPrefix(p netip.Prefix) string {
	if p.Addr().Is4In6() {
		// Compared against unmapped addresses (ParseHost unmaps), a mapped
		// rule would silently never match.
		return fmt.Sprintf("write IPv4-mapped addresses in IPv4 form, as in %q", p.Addr().Unmap())
	}
	if m := p.Masked(); m != p {
		return fmt.Sprintf("CIDR block has host bits set; did you mean %q?", m)
	}
	r.kind, r.prefix = ruleIP, p
	return ""
}

// parseWildcard compiles "*.example.com"; every other use of "*" is an
// error, since a pattern language with more wildcards is one more place for
// an allow-list to mean more than its author thought.
func (r *rule) parseWildcard(host string) string {
	if host == "*" {
		// Names a whole-internet entry admits are held to public
		// addresses; "*" would read as every host, private ones too.
		return `"*" alone would allow every host; list the domains instead, or "0.0.0.0/0" and "::/0" for every public address and name`
	}
	rest, ok := strings.CutPrefix(host, "*.")
	if !ok || strings.Contains(rest, "*") {
		return reasonWildcardPlace
	}
	if rest == "" || rest == "." {
		return reasonWildcardDomain
	}
	name, _, err := parseHost(rest)
	switch {
	case err != nil && endsInNumber(lowerASCII(strings.TrimSuffix(rest, "."))):
		return reasonWildcardDomain + ", not an IP address"
	case err != nil:
		return err.Error()
	case name == "":
		return reasonWildcardDomain + ", not an IP address"
	}
	r.kind, r.name = ruleSuffix, "."+name
	return ""
}

// parseHostEntry compiles a name or an IPv4 address.
func (r *rule) parseHostEntry(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return r.setPrefix(netip.PrefixFrom(ip, ip.BitLen()))
	}
	name, ip, err := parseHost(host)
	switch {
	case err != nil:
		return err.Error()
	case ip.IsValid():
		return canonicalReason(host)
	}
	r.kind, r.name = ruleName, name
	return ""
}

// canonicalReason refuses an IPv4 address in a spelling other than dotted
// decimal ("0x7f.1", "010.0.0.1"): an operator reading "010.0.0.1" sees ten,
// a resolver dials eight.
func canonicalReason(addr string) string {
	_, ip, err := parseHost(addr)
	if err != nil || !ip.IsValid() {
		return "not a valid IP address"
	}
	return fmt.Sprintf("write IP addresses in canonical form: %q means %q", addr, ip)
}
