package egress

import "testing"

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{
		"pypi.org", "PyPI.org.", "127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1",
		"::ffff:127.0.0.1", "[::1]", "::", "0.0.0.0", "1.2.3.4.5", "999.1.1.1", "fe80::1%eth0", "0x",
		"_srv._tcp.example.com", "a..b", "\u212aubernetes", "[127.0.0.1]", "64:ff9b::a00:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ip, err := ParseHost(s)
		switch {
		case err != nil:
			if name != "" || ip.IsValid() {
				t.Fatalf("ParseHost(%q) = %q, %v with error %v", s, name, ip, err)
			}
		case ip.IsValid():
			if name != "" {
				t.Fatalf("ParseHost(%q) = name %q and ip %v", s, name, ip)
			}
			if ip.Is4In6() || ip.Zone() != "" {
				t.Fatalf("ParseHost(%q) = %v, want unmapped and without zone", s, ip)
			}
			n2, ip2, err := ParseHost(ip.String())
			if err != nil || n2 != "" || ip2 != ip {
				t.Fatalf("ParseHost(%q) = %v, but ParseHost(%q) = %q, %v, %v", s, ip, ip.String(), n2, ip2, err)
			}
		default:
			if name == "" {
				t.Fatalf("ParseHost(%q) returned nothing", s)
			}
			n2, ip2, err := ParseHost(name)
			if err != nil || n2 != name || ip2.IsValid() {
				t.Fatalf("ParseHost(%q) = %q, but ParseHost(%q) = %q, %v, %v", s, name, name, n2, ip2, err)
			}
			// A name must never be something the loose IPv4 parser (and so
			// some libc) would read as an address.
			if _, ok := parseLooseIPv4(name); ok {
				t.Fatalf("ParseHost(%q) = name %q, which inet_aton reads as an address", s, name)
			}
		}
	})
}
