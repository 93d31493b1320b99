package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRunAllow: an embedded `airlock run --allow` gets the egress proxy in
// this process. Loopback is reachable only because the test lists it as an
// IP rule; the other port is refused and the refusal reported on stderr.
func TestRunAllow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the host")
	}))
	defer srv.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hits := make(chan struct{}, 1)
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			hits <- struct{}{}
			c.Close()
		}
	}()
	allowed := strings.TrimPrefix(srv.URL, "http://")
	out, stderr, code := airlock(t, "", "run", "--allow", allowed, "--", "sh", "-c",
		fmt.Sprintf("curl -sS --noproxy '' --max-time 20 %s/; curl -s --noproxy '' -o /dev/null -w '%%{http_code}\\n' --max-time 20 http://%s/",
			srv.URL, other.Addr()))
	if code != 0 || out != "hello from the host\n403\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if !strings.Contains(stderr, "airlock: egress denied: http "+other.Addr().String()) || !strings.Contains(stderr, "--allow") {
		t.Errorf("stderr does not report the denial: %q", stderr)
	}
	select {
	case <-hits:
		t.Errorf("the unlisted port was reached")
	default:
	}
	// Without --allow there is no network at all (inside, 127.0.0.1 is the
	// sandbox's own loopback, so the proxy must be named: there is none).
	out, _, _ = airlock(t, "", "run", "--", "sh", "-c", "curl -sS -x http://127.0.0.1:3128 --max-time 5 "+srv.URL+"/ 2>&1; echo curl=$?")
	if !strings.Contains(out, "curl=7") {
		t.Errorf("without --allow: %q, want curl's cannot-connect (7)", out)
	}
	// A bad entry fails before any sandbox exists, naming it.
	_, stderr, code = airlock(t, "", "run", "--allow", "ok.test", "--allow", "*.", "--", "true")
	if code == 0 || !strings.Contains(stderr, `allow[1] "*."`) {
		t.Errorf("bad --allow: exit %d, stderr %q", code, stderr)
	}
}
