package egress

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHost(t *testing.T) {
	type result struct {
		Name string
		IP   string
		Err  string
	}
	ip := func(s string) result { return result{IP: s} }
	name := func(s string) result { return result{Name: s} }
	bad := func(reason string) result { return result{Err: reason} }
	const notV4 = "not a valid IPv4 address, and a name cannot end in a numeric label"
	tests := []struct {
		in   string
		want result
	}{
		// Every spelling of 127.0.0.1 that inet_aton or a browser accepts.
		{"127.0.0.1", ip("127.0.0.1")},
		{"127.0.0.1.", ip("127.0.0.1")},
		{"2130706433", ip("127.0.0.1")},
		{"0x7f000001", ip("127.0.0.1")},
		{"0X7F000001", ip("127.0.0.1")},
		{"017700000001", ip("127.0.0.1")},
		{"0177.0.0.1", ip("127.0.0.1")},
		{"0177.0000.0.01", ip("127.0.0.1")},
		{"127.1", ip("127.0.0.1")},
		{"127.0.1", ip("127.0.0.1")},
		{"0x7f.1", ip("127.0.0.1")},
		{"0x7f.0x0.0x0.0x1", ip("127.0.0.1")},
		{"10.0x10203", ip("10.1.2.3")},
		{"169.254.43518", ip("169.254.169.254")},
		{"0", ip("0.0.0.0")},
		{"0x", ip("0.0.0.0")},
		{"0.0.0.0", ip("0.0.0.0")},
		{"4294967295", ip("255.255.255.255")},
		{"1.16777215", ip("1.255.255.255")},
		{"1.2.65535", ip("1.2.255.255")},
		{"::ffff:127.0.0.1", ip("127.0.0.1")},
		{"[::ffff:127.0.0.1]", ip("127.0.0.1")},
		{"[::FFFF:7F00:1]", ip("127.0.0.1")},
		{"::", ip("::")},
		{"[::1]", ip("::1")},
		{"2001:DB8::1", ip("2001:db8::1")},
		{"::127.0.0.1", ip("::7f00:1")}, // IPv4-compatible stays IPv6; Forbidden sees through it
		{"64:ff9b::10.0.0.1", ip("64:ff9b::a00:1")},
		// Names.
		{"pypi.org", name("pypi.org")},
		{"PyPI.Org.", name("pypi.org")},
		{"localhost", name("localhost")},
		{"_acme-challenge.example.com", name("_acme-challenge.example.com")},
		{"xn--bcher-kva.de", name("xn--bcher-kva.de")},
		{"1.2.3.example", name("1.2.3.example")},
		{"0x7f.example", name("0x7f.example")},
		{"7f000001", name("7f000001")}, // inet_aton stops at the 'f': a name
		{"deadbeef", name("deadbeef")}, // hex without 0x is a name
		{"1e5", name("1e5")},
		{"a." + strings.Repeat("b", 63), name("a." + strings.Repeat("b", 63))},
		{strings.Repeat("a.", 126) + "a", name(strings.Repeat("a.", 126) + "a")},
		// Look like addresses, are not: an error, never a name.
		{"1.2.3.4.5", bad(notV4)},
		{"999.1.1.1", bad(notV4)},
		{"256.0.0.1", bad(notV4)},
		{"1.2.3.256", bad(notV4)},
		{"1.2.65536", bad(notV4)},
		{"1.16777216", bad(notV4)},
		{"4294967296", bad(notV4)},
		{"99999999999999999999999", bad(notV4)},
		{"08.0.0.1", bad(notV4)},
		{"0x1g.1", bad(notV4)},
		{"0xg", name("0xg")}, // not hex after 0x: inet_aton refuses it too
		{"1..1", bad(notV4)},
		{"example.123", bad(notV4)},
		{"example.0x1f", bad(notV4)},
		// Junk.
		{"", bad("empty host")},
		{".", bad("empty host")},
		{"..", bad("name has an empty label")},
		{"a..b", bad("name has an empty label")},
		{".a", bad("name has an empty label")},
		{"-a.com", bad("a label cannot start or end with a hyphen")},
		{"a-.com", bad("a label cannot start or end with a hyphen")},
		{strings.Repeat("a", 64), bad("name has a label longer than 63 bytes")},
		{strings.Repeat("a.", 127) + "a", bad("name is longer than 253 bytes")},
		{"a b", bad(`invalid character ' ' in name`)},
		{"a/b", bad(`invalid character '/' in name`)},
		{"a*b", bad(`invalid character '*' in name`)},
		{"a\x00b", bad(`invalid character '\x00' in name`)},
		{"\u212aubernetes.default", bad("non-ASCII character; write internationalized names in their xn-- form")},
		{"bücher.de", bad("non-ASCII character; write internationalized names in their xn-- form")},
		{"fe80::1%eth0", bad("IPv6 zones are not allowed")},
		{"[fe80::1%25eth0]", bad("IPv6 zones are not allowed")},
		{"[127.0.0.1]", bad("brackets are only for IPv6 addresses")},
		{"[example.com]", bad("brackets are only for IPv6 addresses")},
		{"[::1", bad(`missing "]" after IPv6 address`)},
		{"[::1]:443", bad(`missing "]" after IPv6 address`)},
		{"example.com:443", bad("not a valid IPv6 address")},
		{"::ffff:0x7f.1", bad("not a valid IPv6 address")},
		{"1:2:3:4:5:6:7:8:9", bad("not a valid IPv6 address")},
	}
	for _, tt := range tests {
		n, a, err := parseHost(tt.in)
		got := result{Name: n}
		if a.IsValid() {
			got.IP = a.String()
		}
		if err != nil {
			got.Err = err.Error()
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseHost(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
