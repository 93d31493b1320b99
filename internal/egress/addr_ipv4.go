package egress

import (
	"net/netip"
	"strings"
)

// parseLooseIPv4 parses s the way inet_aton(3) and the WHATWG URL standard
// do: one to four dot-separated numbers, each decimal, octal (leading 0) or
// hex (leading 0x), the last filling all remaining bytes. So "127.1",
// "0x7f000001", "2130706433" and "0177.0.0.1" are all 127.0.0.1. Resolvers,
// libcs and browsers inside a sandbox accept these spellings; the proxy has
// to see the same address they would dial, or "0x7f.1" walks past a check
// written for "127.0.0.1". s must already be lower-case.
func parseLooseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var out uint32
	for i, p := range parts {
		v, ok := parseAtonNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if v > 0xff {
				return netip.Addr{}, false
			}
			out |= v << (8 * (3 - i))
			continue
		}
		// The last number fills the bytes the earlier ones left: 24 bits
		// after one part ("127.1"), 16 after two, 8 after three.
		bits := 8 * (4 - i)
		if bits < 32 && v >= 1<<bits {
			return netip.Addr{}, false
		}
		out |= v
	}
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}

// parseAtonNumber parses one part of a loose IPv4 address. "0x" alone is 0,
// as the WHATWG URL parser reads it.
func parseAtonNumber(p string) (uint32, bool) {
	if p == "" {
		return 0, false
	}
	base, digits := uint64(10), p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		d, ok := digitValue(digits[i])
		if !ok || d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return uint32(v), true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	}
	return 0, false
}

// endsInNumber reports whether a resolver would take s for an IPv4 address
// rather than a name: its last label is all decimal digits or 0x and hex
// digits (the WHATWG URL standard's "ends in a number"). Such a string is an
// address or an error, never a name, because no real top-level domain is
// numeric and a name we let through must not be dialed as an address.
func endsInNumber(s string) bool {
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		for i := 2; i < len(last); i++ {
			if _, ok := digitValue(last[i]); !ok {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}
