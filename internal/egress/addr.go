package egress

import "net/netip"

// forbiddenRange is a block of addresses the proxy never dials unless an
// IP/CIDR allow rule at least as specific as the block lists it.
type forbiddenRange struct {
	prefix netip.Prefix
	name   string
}

// forbiddenV4 lists the IPv4 blocks that are not the public internet, most
// specific first so a cloud metadata address is named as such and not as
// the link-local or CGNAT block around it. The documentation blocks
// (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are deliberately absent:
// they are unrouted in practice and tests use them as "the internet".
var forbiddenV4 = []forbiddenRange{
	// Cloud metadata services hand out instance credentials: the classic
	// SSRF target (Capital One, 2019). AWS/GCP/Azure, AWS ECS task
	// credentials, EKS Pod Identity, Alibaba Cloud, Oracle Cloud.
	{netip.MustParsePrefix("169.254.169.254/32"), "metadata"},
	{netip.MustParsePrefix("169.254.170.2/32"), "metadata"},
	{netip.MustParsePrefix("169.254.170.23/32"), "metadata"},
	{netip.MustParsePrefix("100.100.100.200/32"), "metadata"},
	{netip.MustParsePrefix("192.0.0.192/32"), "metadata"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	// Linux connects 0.0.0.0 (and the rest of 0/8 on some kernels) to the
	// local host, which makes it a loopback in disguise.
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "cgnat"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
}

// forbiddenV6 lists the native IPv6 blocks; addresses that embed an IPv4
// address are handled by classify6.
var forbiddenV6 = []forbiddenRange{
	{netip.MustParsePrefix("fd00:ec2::254/128"), "metadata"}, // AWS IMDS over IPv6
	{netip.MustParsePrefix("fd00:ec2::23/128"), "metadata"},  // AWS EKS Pod Identity
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"}, // deprecated, still routable on old setups
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	prefixMapped   = netip.MustParsePrefix("::ffff:0:0/96")
	prefixCompat   = netip.MustParsePrefix("::/96")
	prefixNAT64    = netip.MustParsePrefix("64:ff9b::/96")
	prefixNAT64Loc = netip.MustParsePrefix("64:ff9b:1::/48")
	prefix6to4     = netip.MustParsePrefix("2002::/16")
)

// Forbidden reports whether ip is in a range the proxy never dials unless
// Rules.AllowsIP says an operator listed it, and names the range:
// "loopback", "private", "link-local", "metadata", "multicast",
// "unspecified", "this-network", "cgnat", "reserved", "benchmarking",
// "broadcast", "unique-local", "site-local". An IPv4-mapped or
// IPv4-compatible IPv6 address gets its embedded address's name; a NAT64
// (64:ff9b::/96, 64:ff9b:1::/48) or 6to4 (2002::/16) address whose embedded
// IPv4 is forbidden is named "nat64-embedded-" or "6to4-embedded-" and that
// name ("nat64-embedded-private"), since a translator would carry the
// connection to that IPv4 address. An invalid ip is forbidden ("invalid").
func Forbidden(ip netip.Addr) (bool, string) {
	_, name, ok := classify(ip)
	return ok, name
}

// classify is Forbidden that also returns the block holding ip, which
// AllowsIP needs to tell "10.0.0.0/8" (lists the private block) from
// "0.0.0.0/0" (lists the internet, not the metadata service). The block is
// invalid when ip is.
func classify(ip netip.Addr) (netip.Prefix, string, bool) {
	if !ip.IsValid() {
		return netip.Prefix{}, "invalid", true
	}
	ip = ip.WithZone("")
	if ip.Is4() {
		for _, r := range forbiddenV4 {
			if r.prefix.Contains(ip) {
				return r.prefix, r.name, true
			}
		}
		return netip.Prefix{}, "", false
	}
	return classify6(ip)
}

func classify6(ip netip.Addr) (netip.Prefix, string, bool) {
	b := ip.As16()
	if prefixMapped.Contains(ip) {
		return embedded(prefixMapped, 12, netip.AddrFrom4([4]byte(b[12:16])), "")
	}
	for _, r := range forbiddenV6 {
		if r.prefix.Contains(ip) {
			return r.prefix, r.name, true
		}
	}
	switch {
	case prefixCompat.Contains(ip):
		// Deprecated IPv4-compatible form (::a.b.c.d), which some stacks
		// still turn into an IPv4 connection.
		return embedded(prefixCompat, 12, netip.AddrFrom4([4]byte(b[12:16])), "")
	case prefixNAT64.Contains(ip):
		return embedded(prefixNAT64, 12, netip.AddrFrom4([4]byte(b[12:16])), "nat64-embedded-")
	case prefixNAT64Loc.Contains(ip):
		// RFC 8215 lets the operator carve any RFC 6052 prefix length out
		// of the local-use block, so the IPv4 address may sit in any of the
		// layouts; forbid if any of them is forbidden.
		for _, v4 := range nat64LocalEmbeddings(b) {
			if _, name, ok := classify(v4); ok {
				return prefixNAT64Loc, "nat64-embedded-" + name, true
			}
		}
	case prefix6to4.Contains(ip):
		return embedded(prefix6to4, 2, netip.AddrFrom4([4]byte(b[2:6])), "6to4-embedded-")
	}
	return netip.Prefix{}, "", false
}

// embedded classifies v4, found at byte offset off of an address in outer,
// and maps its block back into outer: 10.0.0.0/8 inside ::ffff:0:0/96 is
// ::ffff:10.0.0.0/104.
func embedded(outer netip.Prefix, off int, v4 netip.Addr, namePrefix string) (netip.Prefix, string, bool) {
	block, name, ok := classify(v4)
	if !ok {
		return netip.Prefix{}, "", false
	}
	b := outer.Addr().As16()
	v := block.Addr().As4()
	copy(b[off:], v[:])
	return netip.PrefixFrom(netip.AddrFrom16(b), off*8+block.Bits()), namePrefix + name, true
}

// nat64LocalEmbeddings returns the IPv4 addresses b carries under each RFC
// 6052 layout whose prefix fits inside 64:ff9b:1::/48. Byte 8 (bits 64-71)
// is reserved and skipped by the layouts that straddle it.
func nat64LocalEmbeddings(b [16]byte) []netip.Addr {
	return []netip.Addr{
		netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}),   // /48
		netip.AddrFrom4([4]byte{b[7], b[9], b[10], b[11]}),  // /56
		netip.AddrFrom4([4]byte{b[9], b[10], b[11], b[12]}), // /64
		netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}),
	}
}
