package main

import "testing"

// TestBenchEgress runs the egress bench small: it fails if either proxied
// path did not go through the proxy, or a download came up short.
func TestBenchEgress(t *testing.T) {
	if err := benchEgress([]string{"-n", "20", "-n-tunnel", "5", "-mb", "2", "-runs", "2"}); err != nil {
		t.Fatal(err)
	}
}
