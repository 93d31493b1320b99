package main

import (
	"strings"
	"testing"
)

// TestEgressAllowPrivateFlag: serve's --egress-allow-private takes the
// ranges it opens and refuses, naming the flag, a value that would open
// less (or more) than it says.
func TestEgressAllowPrivateFlag(t *testing.T) {
	cfg, err := egressConfig("", "", []string{"10.20.0.0/16", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cfg.AllowPrivate); got != 2 || cfg.AllowPrivate[1].String() != "127.0.0.1/32" {
		t.Errorf("AllowPrivate = %v", cfg.AllowPrivate)
	}
	for _, bad := range []string{"127.0.0.0/8", "0.0.0.0/0", "8.8.0.0/16", "nope"} {
		if _, err := egressConfig("", "", []string{bad}); err == nil || !strings.Contains(err.Error(), "--egress-allow-private") {
			t.Errorf("--egress-allow-private %s: %v, want an error naming the flag", bad, err)
		}
	}
}
