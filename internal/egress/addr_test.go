package egress

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestForbidden(t *testing.T) {
	type result struct {
		Forbidden bool
		Name      string
	}
	no := result{}
	is := func(name string) result { return result{true, name} }
	tests := []struct {
		ip   string
		want result
	}{
		{"0.0.0.0", is("unspecified")},
		{"0.1.2.3", is("this-network")},
		{"10.0.0.1", is("private")},
		{"10.255.255.255", is("private")},
		{"100.64.0.1", is("cgnat")},
		{"100.127.255.255", is("cgnat")},
		{"100.128.0.0", no},
		{"100.100.100.200", is("metadata")},
		{"127.0.0.1", is("loopback")},
		{"127.255.255.254", is("loopback")},
		{"169.254.0.1", is("link-local")},
		{"169.254.169.254", is("metadata")},
		{"169.254.170.2", is("metadata")},
		{"172.16.0.1", is("private")},
		{"172.31.255.255", is("private")},
		{"172.32.0.0", no},
		{"172.15.255.255", no},
		{"192.0.0.1", is("reserved")},
		{"192.0.0.192", is("metadata")},
		{"192.168.1.1", is("private")},
		{"198.18.0.1", is("benchmarking")},
		{"198.19.255.255", is("benchmarking")},
		{"198.20.0.0", no},
		{"224.0.0.1", is("multicast")},
		{"239.255.255.250", is("multicast")},
		{"240.0.0.1", is("reserved")},
		{"255.255.255.254", is("reserved")},
		{"255.255.255.255", is("broadcast")},
		// Documentation ranges are "the internet" for tests.
		{"192.0.2.1", no},
		{"198.51.100.1", no},
		{"203.0.113.1", no},
		{"8.8.8.8", no},
		{"1.1.1.1", no},
		// IPv6.
		{"::", is("unspecified")},
		{"::1", is("loopback")},
		{"fe80::1", is("link-local")},
		{"fe80::1%eth0", is("link-local")},
		{"febf::1", is("link-local")},
		{"fec0::1", is("site-local")},
		{"fc00::1", is("unique-local")},
		{"fd12:3456::1", is("unique-local")},
		{"fd00:ec2::254", is("metadata")},
		{"ff02::1", is("multicast")},
		{"2001:db8::1", no},
		{"2606:4700::1111", no},
		// Embedded IPv4.
		{"::ffff:127.0.0.1", is("loopback")},
		{"::ffff:169.254.169.254", is("metadata")},
		{"::ffff:203.0.113.1", no},
		{"::127.0.0.1", is("loopback")},
		{"::10.0.0.1", is("private")},
		{"::0.0.0.2", is("this-network")},
		{"::203.0.113.1", no},
		{"64:ff9b::10.0.0.1", is("nat64-embedded-private")},
		{"64:ff9b::127.0.0.1", is("nat64-embedded-loopback")},
		{"64:ff9b::169.254.169.254", is("nat64-embedded-metadata")},
		{"64:ff9b::203.0.113.1", no},
		{"64:ff9b:1:a9fe:a9:fe00::", is("nat64-embedded-metadata")}, // /48 layout of 169.254.169.254
		{"64:ff9b:1:87f:0:1::", is("nat64-embedded-loopback")},      // /56 layout of 127.0.0.1 (8.127.0.0 at /48)
		{"64:ff9b:1:808:8:808:808:808", no},                         // 8.8.8.8 in every layout
		{"2002:a00:1::1", is("6to4-embedded-private")},
		{"2002:7f00:1::", is("6to4-embedded-loopback")},
		{"2002:cb00:7101::1", no},
	}
	for _, tt := range tests {
		ip, err := netip.ParseAddr(tt.ip)
		if err != nil {
			t.Fatal(err)
		}
		var got result
		got.Forbidden, got.Name = Forbidden(ip)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Forbidden(%s) (-want +got):\n%s", tt.ip, diff)
		}
	}
	if ok, name := Forbidden(netip.Addr{}); !ok || name != "invalid" {
		t.Errorf("Forbidden(invalid) = %v, %q", ok, name)
	}
}

// TestForbiddenBlock pins the block AllowsIP compares rules against,
// including blocks mapped back into IPv6.
func TestForbiddenBlock(t *testing.T) {
	tests := map[string]string{
		"10.1.2.3":                 "10.0.0.0/8",
		"169.254.169.254":          "169.254.169.254/32",
		"169.254.1.1":              "169.254.0.0/16",
		"::ffff:10.1.2.3":          "::ffff:10.0.0.0/104",
		"64:ff9b::7f00:1":          "64:ff9b::7f00:0/104",
		"2002:a00:1::1":            "2002:a00::/24",
		"64:ff9b:1:a9fe:a9:fe00::": "64:ff9b:1::/48",
		"fd12::1":                  "fc00::/7",
	}
	for in, want := range tests {
		block, _, ok := classify(netip.MustParseAddr(in))
		if !ok || block.String() != want {
			t.Errorf("classify(%s) = %v, %v; want %s", in, block, ok, want)
		}
	}
}
