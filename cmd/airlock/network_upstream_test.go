package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// TestEgressNoticeSaysUpstreamFailed: the CLI's line about an egress
// event tells a denial (what to --allow) from an upstream failure the
// allow-list let through, whatever the protocol.
func TestEgressNoticeSaysUpstreamFailed(t *testing.T) {
	tests := []struct {
		proto, decision, reason, upstream, want string
	}{
		{"http", "denied", "no allow rule matches example.com:443", "",
			"airlock: egress denied: http example.com:443: no allow rule matches example.com:443 (to allow it: --allow example.com:443)"},
		{"connect", "allowed", "DNS lookup failed: no such host", "dns",
			"airlock: egress to example.com:443 failed upstream: DNS lookup failed: no such host (the allow-list allowed it)"},
		{"socks5", "allowed", "connection refused connecting to 203.0.113.7:443", "refused",
			"airlock: egress to example.com:443 failed upstream: connection refused connecting to 203.0.113.7:443 (the allow-list allowed it)"},
		{"http", "allowed", "", "", ""},
	}
	for _, tt := range tests {
		if got := egressNotice(tt.proto, "example.com", 443, tt.decision, tt.reason, tt.upstream); got != tt.want {
			t.Errorf("egressNotice(%s, %s, %s) = %q, want %q", tt.proto, tt.decision, tt.upstream, got, tt.want)
		}
	}
}

// TestRunReportsUpstreamFailure: an embedded `airlock run` whose allowed
// target refuses the connection says so on stderr, once per attempt over
// HTTP proxying, CONNECT and SOCKS5, as an upstream failure and not as a
// denial.
func TestRunReportsUpstreamFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	curl := "curl -s --noproxy '' -o /dev/null -w '%{http_code} ' --max-time 20 "
	out, stderr, _ := airlock(t, "", "run", "--allow", target, "--", "sh", "-c",
		curl+"http://"+target+"/; "+curl+"-p http://"+target+"/; "+curl+"--socks5-hostname 127.0.0.1:1080 http://"+target+"/; echo")
	if !strings.HasPrefix(out, "502 ") {
		t.Errorf("curl through the HTTP proxy: %q, want 502 first", out)
	}
	want := fmt.Sprintf("airlock: egress to %s failed upstream: connection refused connecting to %s (the allow-list allowed it)", target, target)
	if n := strings.Count(stderr, want); n != 3 {
		t.Errorf("stderr has the upstream line %d times, want 3 (http, connect, socks5): %q", n, stderr)
	}
	if strings.Contains(stderr, "egress denied") {
		t.Errorf("an upstream failure reported as a denial: %q", stderr)
	}
}
