package secrets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/egress"
)

// checkHost reports why h is not a host a secret may be sent to: an exact
// DNS name or "*." and a name, lower-case, with an optional ":port".
//
// IP addresses are refused: a secret goes to a service someone named, and
// the egress proxy matches secrets by the name a request asked for, which a
// sandbox chooses; an address would also tie the secret to whatever holds
// that address tomorrow.
func checkHost(h string) error {
	switch {
	case h == "":
		return errors.New("empty host")
	case strings.Contains(h, "://"):
		return errors.New(`a URL scheme is not allowed; write the host only, as in "api.example.com"`)
	case strings.ContainsAny(h, "/?#"):
		return errors.New(`a path is not allowed; write the host only, as in "api.example.com"`)
	case strings.Contains(h, "@"):
		return errors.New("userinfo (user@) is not allowed; write the host only")
	case strings.HasPrefix(h, "[") || strings.Count(h, ":") > 1:
		return errors.New("IP addresses are not allowed; name the host")
	}
	for i := 0; i < len(h); i++ {
		// Checked before anything is compared: Unicode case folding maps
		// "K" (U+212A KELVIN SIGN) to "k", so a name that only looks
		// ASCII after folding must not get through.
		if h[i] >= 0x80 {
			return errors.New("non-ASCII character; write internationalized names in their xn-- form")
		}
		if 'A' <= h[i] && h[i] <= 'Z' {
			return errors.New("upper-case letter; hosts are matched in lower case")
		}
	}
	name, port, hasPort := strings.Cut(h, ":")
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("port %q must be a number from 1 to 65535, without sign or leading zeros", port)
		}
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		if err := checkDNSName(rest); err != nil {
			return err
		}
		// "*.com" would send the secret to every .com host: a typo that
		// leaks the secret, never something a tenant means.
		if !strings.Contains(rest, ".") {
			return errors.New(`a wildcard needs at least two labels after "*.", as in "*.example.com"`)
		}
		return nil
	}
	if strings.Contains(name, "*") {
		return errors.New(`"*" is only allowed as the whole first label, as in "*.example.com"`)
	}
	return checkDNSName(name)
}

// checkDNSName reports why s, lower-case, is not a DNS name: LDH labels
// (underscores allowed, as in "_dmarc"), 1..63 bytes each, at most 253 in
// all, the last one not a number.
func checkDNSName(s string) error {
	switch {
	case s == "":
		return errors.New("empty host")
	case len(s) > 253:
		return errors.New("name is longer than 253 bytes")
	case strings.HasSuffix(s, "."):
		return errors.New(`trailing "." is not allowed`)
	}
	if err := egress.CheckName(s); err != nil {
		return err
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	// No top-level domain is numeric; a name ending in a number is an IPv4
	// address in one of the spellings resolvers accept ("10.0.0.1",
	// "167772161", "0x0a000001", "012.0.0.1").
	if isNumber(last) {
		return errors.New("IP addresses are not allowed; name the host")
	}
	return nil
}

// isNumber reports whether a label reads as a number to inet_aton:
// decimal, octal (leading 0) or hex (0x).
func isNumber(label string) bool {
	digits := label
	hex := false
	if len(label) >= 2 && label[0] == '0' && label[1] == 'x' {
		digits, hex = label[2:], true
		if digits == "" {
			return true // "0x" alone is zero to inet_aton
		}
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if !('0' <= c && c <= '9' || hex && 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
