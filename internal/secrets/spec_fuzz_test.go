package secrets

import (
	"strings"
	"testing"
)

// FuzzSpecValidate feeds Validate and Normalize names, hosts and inject
// fields from API bodies: they must never panic, and what passes must keep
// the promises the egress proxy relies on.
func FuzzSpecValidate(f *testing.F) {
	f.Add("GITHUB_TOKEN", "v", "api.github.com", "*.example.com:8443", "Authorization", "Bearer {value}")
	f.Add("_", "", "2130706433", "[::1]:80", "Proxy-Authorization", "{value}{value}")
	f.Add("1X", "a\r\nb", "https://x/y", "*.com", "Host", "\n{value}")
	f.Add("K", "\x00", "\u212Aubernetes.default", "0x7f.0.0.1", "", "")
	f.Fuzz(func(t *testing.T, name, value, host1, host2, header, format string) {
		s := Spec{Name: name, Value: value, Hosts: []string{host1, host2}}
		if header != "" || format != "" {
			s.Inject = &Inject{Header: header, Format: format}
		}
		_ = ValidateName(name)
		if s.Validate() == nil {
			checkValid(t, s)
		}
		s.Normalize()
		if s.Validate() == nil {
			checkValid(t, s)
		}
	})
}

func checkValid(t *testing.T, s Spec) {
	t.Helper()
	for _, h := range s.Hosts {
		if h == "" || h != strings.ToLower(h) || strings.ContainsAny(h, "/@[] \r\n\x00") || strings.Count(h, ":") > 1 {
			t.Errorf("host %q passed", h)
		}
	}
	if in := s.Inject; in != nil {
		if strings.ContainsAny(in.Header+in.Format+s.Value, "\r\n") {
			t.Errorf("a line break passed into a header: %q %q", in.Header, in.Format)
		}
		if in.Format != "" && strings.Count(in.Format, ValueMarker) != 1 {
			t.Errorf("format %q passed", in.Format)
		}
	}
	if strings.IndexByte(s.Value, 0) >= 0 || len(s.Value) > MaxValueBytes {
		t.Errorf("value of %d bytes (too long or with a NUL) passed", len(s.Value))
	}
}
