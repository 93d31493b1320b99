package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Decision is the outcome of matching one target.
type Decision struct {
	Allowed bool
	List    string // "allow", "deny", "ask", or "" when nothing matched (default deny) or mode none
	Rule    string // the entry as written that decided, "" if none
	Reason  string // short text for logs and error pages

	// PublicOnly says a whole-internet entry ("0.0.0.0/0" or "::/0", see
	// Compile) admitted a name: the proxy carries it only if every address
	// the name resolves to is public and no deny entry lists one, and
	// connects only to those of a family such an entry covers at the
	// port. Rule is then the first such entry.
	PublicOnly bool

	// Ask says no rule allows or denies the target and the policy's ask
	// puts it to a person (Config.Ask); Allowed is false, List "ask",
	// Rule the ask entry, or "" for "ask": true.
	Ask bool
}

// Match decides for a target the client named: either a DNS name (as
// ParseHost returns it: lower-case, no trailing dot) or, when ip is valid,
// an IP literal, in which case name is ignored. Name rules match names only
// and IP/CIDR rules match addresses only: a name never matches a CIDR rule,
// even if it resolves into it, because what it resolves to is the
// resolver's choice and the attacker may run the resolver. The one
// exception is the whole internet: a name no name rule allows is allowed
// with PublicOnly set when "0.0.0.0/0" or "::/0" covers the port, since
// the resolver can then pick nothing the entry does not already allow
// once the proxy refuses every address that is not public. Deny wins over
// allow, and both over ask; mode none denies everything. Forbidden addresses are not Match's
// business: the proxy checks each address it is about to dial with
// Forbidden and AllowsIP (and, for PublicOnly, Proxy.checkPublic).
func (r *Rules) Match(name string, ip netip.Addr, port int) Decision {
	if r == nil || r.policy.Mode != ModeAllowlist {
		return Decision{Reason: "network mode is none"}
	}
	var target string
	if ip.IsValid() {
		ip = ip.WithZone("").Unmap()
		target = net.JoinHostPort(ip.String(), strconv.Itoa(port))
	} else {
		name = strings.TrimSuffix(lowerASCII(name), ".")
		if name == "" {
			return Decision{Reason: "no host to match"}
		}
		target = net.JoinHostPort(name, strconv.Itoa(port))
	}
	if d, ok := first(r.deny, name, ip, port, true); ok {
		return Decision{List: "deny", Rule: d.entry, Reason: fmt.Sprintf("denied by rule %q", d.entry)}
	}
	if a, ok := first(r.allow, name, ip, port, false); ok {
		return Decision{Allowed: true, List: "allow", Rule: a.entry, Reason: fmt.Sprintf("matched allow rule %q", a.entry)}
	}
	if a, ok := r.wholeInternet(ip, port); ok && !ip.IsValid() && !isLocalhostName(name) {
		return Decision{Allowed: true, List: "allow", Rule: a.entry, PublicOnly: true,
			Reason: fmt.Sprintf("matched allow rule %q, if every address of the name is public", a.entry)}
	}
	if d, ok := r.matchAsk(name, ip, port, target); ok {
		return d
	}
	return Decision{Reason: "no allow rule matches " + target}
}

// wholeInternet returns the first allow rule that lists every address of
// a family ("0.0.0.0/0", "::/0", with or without a port) and covers port:
// of ip's family when ip is valid, of either when not. Narrower blocks
// never count: "1.2.3.0/24" says which addresses, not which names, and
// only a rule holding all of a family can take whatever a name resolves
// to (once the proxy has refused the non-public ones).
func (r *Rules) wholeInternet(ip netip.Addr, port int) (rule, bool) {
	if r == nil || r.policy.Mode != ModeAllowlist {
		return rule{}, false
	}
	ip = ip.WithZone("").Unmap()
	for _, a := range r.allow {
		if a.kind == ruleIP && a.prefix.Bits() == 0 && a.coversPort(port, false) &&
			(!ip.IsValid() || a.prefix.Addr().Is4() == ip.Is4()) {
			return a, true
		}
	}
	return rule{}, false
}

// deniesIP returns the deny rule listing ip:port, if one does.
func (r *Rules) deniesIP(ip netip.Addr, port int) (rule, bool) {
	if r == nil {
		return rule{}, false
	}
	return first(r.deny, "", ip.WithZone("").Unmap(), port, true)
}

// dialedRule is the allow entry that admitted a connection d allowed once
// the proxy dialed addr: for a name a whole-internet entry admitted, the
// entry of addr's family, so that the log names the rule that let the
// connection through.
func (r *Rules) dialedRule(d Decision, addr netip.Addr, port int) string {
	if d.PublicOnly {
		if a, ok := r.wholeInternet(addr, port); ok {
			return a.entry
		}
	}
	return d.Rule
}

// AllowsIP reports whether an IP/CIDR allow rule, and no deny rule, lists
// ip:port explicitly. The proxy asks it before dialing an address Forbidden
// refuses that the operator opened (Config.AllowPrivate): a tenant's rule
// alone never opens one.
//
// A rule broader than the forbidden block holding ip does not count:
// "0.0.0.0/0" or "::/0" lists the internet, not 127.0.0.1, and
// "169.254.0.0/16" lists the link-local block, not the metadata service at
// 169.254.169.254, which only a rule naming that address opens. That keeps
// "allow everything" from also meaning "hand out the instance's cloud
// credentials".
func (r *Rules) AllowsIP(ip netip.Addr, port int) bool {
	if r == nil || r.policy.Mode != ModeAllowlist || !ip.IsValid() {
		return false
	}
	ip = ip.WithZone("").Unmap()
	if _, ok := first(r.deny, "", ip, port, true); ok {
		return false
	}
	block, _, forbidden := classify(ip)
	for _, a := range r.allow {
		if a.kind != ruleIP || !a.matches("", ip, port, false) {
			continue
		}
		// Both contain ip, so the rule lies inside the block exactly when
		// it is at least as long.
		if !forbidden || block.IsValid() && a.prefix.Bits() >= block.Bits() && a.prefix.Addr().Is4() == block.Addr().Is4() {
			return true
		}
	}
	return false
}

func first(rules []rule, name string, ip netip.Addr, port int, deny bool) (rule, bool) {
	for _, r := range rules {
		if r.matches(name, ip, port, deny) {
			return r, true
		}
	}
	return rule{}, false
}

// matches reports whether r covers the target. A rule without a port
// covers 80 and 443 in the allow list and every port in the deny list.
func (r *rule) matches(name string, ip netip.Addr, port int, deny bool) bool {
	if !r.coversPort(port, deny) {
		return false
	}
	if ip.IsValid() {
		return r.kind == ruleIP && r.prefix.Contains(ip)
	}
	switch r.kind {
	case ruleName:
		return name == r.name
	case ruleSuffix:
		return len(name) > len(r.name) && strings.HasSuffix(name, r.name)
	}
	return false
}

func (r *rule) coversPort(port int, deny bool) bool {
	switch {
	case r.port != 0:
		return port == r.port
	case deny:
		return true
	}
	return port == 80 || port == 443
}
