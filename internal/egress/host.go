package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseHost classifies a host as a client wrote it (CONNECT target, URL
// host, Host header, SOCKS domain). It strips the brackets around an IPv6
// literal and one trailing dot, lower-cases, and returns either ip, for an
// IP literal in any spelling a resolver or libc would accept ("127.1",
// "0x7f000001", "2130706433", "0177.0.0.1", "::ffff:127.0.0.1" — the last
// returned as the plain IPv4 address), or name, for a valid DNS name (LDH
// labels, underscores allowed, 1..63 bytes each, at most 253 in all).
// Anything else is an error, including IPv6 zones and strings that look
// like an IPv4 address but are not one ("1.2.3.4.5", "999.1.1.1"): passed
// on as a name, some resolver would still dial them as an address.
func ParseHost(s string) (name string, ip netip.Addr, err error) {
	name, ip, err = parseHost(s)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("parse host %s: %w", quoteShort(s), err)
	}
	return name, ip, nil
}

// parseHost is ParseHost with a bare reason as its error, for callers that
// add their own context.
func parseHost(s string) (string, netip.Addr, error) {
	if s == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	for i := 0; i < len(s); i++ {
		// Checked before lower-casing: Unicode case folding maps "K"
		// (U+212A KELVIN SIGN) to "k", so folding first would let
		// "\u212Aubernetes.default" slip through as "kubernetes.default".
		if s[i] >= 0x80 {
			return "", netip.Addr{}, errors.New("non-ASCII character; write internationalized names in their xn-- form")
		}
	}
	if s[0] == '[' {
		if s[len(s)-1] != ']' {
			return "", netip.Addr{}, errors.New(`missing "]" after IPv6 address`)
		}
		inner := s[1 : len(s)-1]
		if !strings.Contains(inner, ":") {
			return "", netip.Addr{}, errors.New("brackets are only for IPv6 addresses")
		}
		ip, err := parseIPv6(inner)
		return "", ip, err
	}
	if strings.Contains(s, ":") {
		ip, err := parseIPv6(s)
		return "", ip, err
	}
	s = strings.TrimSuffix(lowerASCII(s), ".")
	if s == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	if endsInNumber(s) {
		ip, ok := parseLooseIPv4(s)
		if !ok {
			return "", netip.Addr{}, errors.New("not a valid IPv4 address, and a name cannot end in a numeric label")
		}
		return "", ip, nil
	}
	if err := CheckName(s); err != nil {
		return "", netip.Addr{}, err
	}
	return s, netip.Addr{}, nil
}

// parseIPv6 parses an IPv6 literal, returning an IPv4-mapped address as the
// IPv4 address it stands for so that IPv4 rules and checks apply to it.
func parseIPv6(s string) (netip.Addr, error) {
	if strings.Contains(s, "%") {
		// A zone picks an interface; a sandbox has no business choosing
		// the proxy's interfaces.
		return netip.Addr{}, errors.New("IPv6 zones are not allowed")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is6() {
		return netip.Addr{}, errors.New("not a valid IPv6 address")
	}
	return ip.Unmap(), nil
}

// CheckName reports why s, lower-case and without a trailing dot, is not a
// DNS name the proxy will resolve: LDH labels (underscores allowed), 1..63
// bytes each, at most 253 in all.
func CheckName(s string) error {
	if len(s) > 253 {
		return errors.New("name is longer than 253 bytes")
	}
	for label := range strings.SplitSeq(s, ".") {
		switch {
		case label == "":
			return errors.New("name has an empty label")
		case len(label) > 63:
			return errors.New("name has a label longer than 63 bytes")
		case label[0] == '-' || label[len(label)-1] == '-':
			return errors.New("a label cannot start or end with a hyphen")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("invalid character %q in name", c)
			}
		}
	}
	return nil
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// quoteShort quotes s for an error message, cut so that a megabyte of
// hostile input does not become a megabyte of log line.
func quoteShort(s string) string {
	const max = 80
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
