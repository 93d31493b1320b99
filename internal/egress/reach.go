package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// A tenant's rules never open a forbidden address on their own: a tenant
// that could allow "127.0.0.1:7070" or "10.0.0.0/8" would reach the
// daemon's own API and every service on the host and its network through
// the proxy (SSRF by policy). Only the operator opens chosen ranges, for
// every sandbox, with Config.AllowPrivate (airlock serve
// --egress-allow-private); a tenant's IP/CIDR rule must then still list
// the address (Rules.AllowsIP).

// ParseAllowPrivate parses one --egress-allow-private value: a CIDR block
// (or a single address) that lies inside one forbidden range, such as
// "10.0.0.0/8" or "192.168.5.0/24". Loopback and the host's own addresses
// open one address at a time ("127.0.0.1/32"): a whole block of them
// would hand every sandbox every service bound to the host, which must be
// a deliberate choice of one port's address, not a side effect of opening
// a network. A block wider than its range ("10.0.0.0/7") or holding no
// forbidden address at all is an error, since it would open less than it
// says.
func ParseAllowPrivate(s string) (netip.Prefix, error) {
	if strings.Contains(s, "%") {
		return netip.Prefix{}, fmt.Errorf("%q: IPv6 zones are not allowed", s)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		ip, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf("%q: want a CIDR block such as 10.0.0.0/8, or an address", s)
		}
		p = netip.PrefixFrom(ip, ip.BitLen())
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("%q: write IPv4-mapped addresses in IPv4 form", s)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set; did you mean %q?", s, m)
	}
	if p.IsSingleIP() {
		return p, nil // any one address, so that a host's own public one can be opened
	}
	block, name, forbidden := classify(p.Addr())
	switch {
	case !forbidden:
		return netip.Prefix{}, fmt.Errorf("%q holds public addresses, which sandboxes reach without it; list private, link-local or other forbidden ranges", s)
	case p.Bits() < block.Bits():
		return netip.Prefix{}, fmt.Errorf("%q is wider than the %s range %s that holds it; list the ranges one by one", s, name, block)
	case name == "loopback":
		return netip.Prefix{}, fmt.Errorf("%q opens a block of loopback addresses; name the one address a service listens on, as in %q", s, netip.PrefixFrom(p.Addr().Next(), p.Addr().BitLen()))
	}
	return p, nil
}

// opened reports whether the operator's AllowPrivate opens ip, forbidden
// in block or one of the host's own addresses (own). A prefix counts only
// if it lies inside the block, as Rules.AllowsIP requires of a tenant's
// rule, and for a host's own address only if it names that address.
func (p *Proxy) opened(ip netip.Addr, block netip.Prefix, own bool) bool {
	for _, o := range p.cfg.AllowPrivate {
		switch {
		case !o.Contains(ip):
		case own && !o.IsSingleIP():
		case block.IsValid() && (o.Bits() < block.Bits() || o.Addr().Is4() != block.Addr().Is4()):
		default:
			return true
		}
	}
	return false
}

// reachable reports whether the proxy may dial ip for rules r at port:
// not forbidden nor the host's own, or opened by the operator and listed
// by one of r's IP rules. Otherwise it says why not.
func (p *Proxy) reachable(r *Rules, ip netip.Addr, port int) (bool, string) {
	ok, why, _ := p.reach(r, ip, port)
	return ok, why
}

// reach is reachable that also says whether a rule of the sandbox could
// open ip at all (the operator opened it), for the refusal's hint.
func (p *Proxy) reach(r *Rules, ip netip.Addr, port int) (ok bool, why string, ruleOpens bool) {
	ip = ip.WithZone("").Unmap()
	block, why, forbidden := classify(ip)
	own := p.host.has(ip)
	if !forbidden && !own {
		return true, "", true
	}
	if !forbidden {
		why, block = "host's own", netip.Prefix{}
	}
	ruleOpens = p.cfg.OwnRules || p.opened(ip, block, own)
	if ruleOpens && r.AllowsIP(ip, port) {
		return true, "", true
	}
	return false, why, ruleOpens
}

// isLocalhostName reports whether name (lower-case, no trailing dot) is
// "localhost" or below it, which RFC 6761 reserves for loopback: many
// resolvers answer 127.0.0.1 for them without asking any server.
func isLocalhostName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// CheckReach refuses a tenant's policy whose allow or ask entries include one
// that names only addresses the proxy will never dial for it: loopback,
// private, link-local and metadata, CGNAT, multicast, reserved, the host's
// own addresses (as the host has them now), and localhost names, unless
// the operator opened them (AllowPrivate). A wider entry, such as
// "0.0.0.0/0", is accepted: it opens the public addresses it holds (and
// names that resolve only to public addresses) and none of the others,
// which the proxy checks on every address it dials.
// Deny entries are never refused. The error is a *PatternError.
func (p *Proxy) CheckReach(pol Policy) error {
	if err := p.checkReachList("allow", pol.Allow); err != nil {
		return err
	}
	// An ask entry no approval could open would only ask people in vain.
	return p.checkReachList("ask", pol.Ask.Patterns)
}

func (p *Proxy) checkReachList(list string, entries []string) error {
	for i, e := range entries {
		r, reason := parseEntry(e)
		if reason != "" {
			return &PatternError{List: list, Index: i, Entry: e, Reason: reason}
		}
		if why := p.unreachableEntry(r); why != "" {
			return &PatternError{List: list, Index: i, Entry: e, Reason: why +
				"; sandboxes never reach it unless the operator opens it (airlock serve --egress-allow-private)"}
		}
	}
	return nil
}

// unreachableEntry says why r names only addresses the proxy never dials
// for a tenant, or "".
func (p *Proxy) unreachableEntry(r rule) string {
	switch r.kind {
	case ruleName, ruleSuffix:
		name := strings.TrimPrefix(r.name, ".")
		if isLocalhostName(name) {
			return fmt.Sprintf("%s names loopback (RFC 6761 reserves localhost and the names below it)", name)
		}
		return ""
	}
	pre := r.prefix
	if pre.IsSingleIP() {
		ip := pre.Addr()
		block, name, forbidden := classify(ip)
		own := p.host.has(ip)
		switch {
		case forbidden && !p.opened(ip, block, own):
			return fmt.Sprintf("%s is a %s address (%s)", ip, name, block)
		case own && !p.opened(ip, netip.Prefix{}, true):
			return fmt.Sprintf("%s is one of this host's own addresses", ip)
		}
		return ""
	}
	if block, name, ok := p.closedBlock(pre, pre.Bits(), 0); ok {
		if block.Bits() <= pre.Bits() {
			return fmt.Sprintf("%s lies in the %s range %s", pre, name, block)
		}
		return fmt.Sprintf("%s holds only forbidden addresses (%s %s and others)", pre, name, block)
	}
	return ""
}

// closedBlock reports whether every address of q, part of a rule of bits
// bits, is closed to the rule, and names a forbidden block it meets. q is
// split in halves where it straddles a block's edge, so that a union of
// blocks ("224.0.0.0/3": multicast and reserved) counts as closed while a
// block holding one public address does not. Where the operator opened
// part of a block the answer leans to open: the dial check decides each
// address exactly, this one only spares a tenant a rule that can never
// work.
func (p *Proxy) closedBlock(q netip.Prefix, bits, depth int) (netip.Prefix, string, bool) {
	if prefixNAT64Loc.Overlaps(q) && q.Bits() >= prefixNAT64Loc.Bits() {
		return netip.Prefix{}, "", false // its layouts mix public and forbidden addresses
	}
	block, name, forbidden := classify(q.Addr())
	if forbidden && block.Bits() <= q.Bits() {
		if bits < block.Bits() {
			return block, name, true // wider than the block: AllowsIP never counts it
		}
		for _, o := range p.cfg.AllowPrivate {
			if o.Overlaps(q) && o.Bits() >= block.Bits() {
				return netip.Prefix{}, "", false
			}
		}
		return block, name, true
	}
	if !overlapsForbidden(q) || q.IsSingleIP() || depth > 128 {
		return netip.Prefix{}, "", false
	}
	lo := netip.PrefixFrom(q.Addr(), q.Bits()+1)
	hi := netip.PrefixFrom(lastAddr(lo).Next(), q.Bits()+1)
	b1, n1, ok := p.closedBlock(lo, bits, depth+1)
	if !ok {
		return netip.Prefix{}, "", false
	}
	if _, _, ok := p.closedBlock(hi, bits, depth+1); !ok {
		return netip.Prefix{}, "", false
	}
	return b1, n1, true
}

// embeddings are the IPv6 prefixes that carry an IPv4 address at a byte
// offset, which classify6 judges by that address.
var embeddings = []struct {
	outer netip.Prefix
	off   int
}{{prefixMapped, 12}, {prefixCompat, 12}, {prefixNAT64, 12}, {prefix6to4, 2}}

// overlapsForbidden reports whether q may hold a forbidden address: it
// meets a forbidden block, or carries an IPv4 block that does.
func overlapsForbidden(q netip.Prefix) bool {
	if q.Addr().Is4() {
		return overlapsList(forbiddenV4, q)
	}
	if overlapsList(forbiddenV6, q) {
		return true
	}
	for _, e := range embeddings {
		switch {
		case !e.outer.Overlaps(q):
			continue
		case q.Bits() < e.outer.Bits():
			return true // holds the whole embedding
		}
		b := q.Addr().As16()
		v4 := netip.PrefixFrom(netip.AddrFrom4([4]byte(b[e.off:e.off+4])), min(q.Bits()-e.off*8, 32))
		if overlapsList(forbiddenV4, v4.Masked()) {
			return true
		}
	}
	return false
}

func overlapsList(list []forbiddenRange, q netip.Prefix) bool {
	for _, r := range list {
		if r.prefix.Overlaps(q) {
			return true
		}
	}
	return false
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
