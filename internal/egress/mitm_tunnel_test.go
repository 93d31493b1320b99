package egress

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A client must not use a tunnel to a bound host to reach another: the
// policy, the SNI guard and the bindings all judged the CONNECT target.
func TestMITMRefusesOtherHostInTunnel(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	bound, other := e.hostPort(mitmBound), e.hostPort(mitmOther)
	tests := []struct {
		name, req string
		status    int
	}{
		{"Host header", "GET / HTTP/1.1\r\nHost: " + other + "\r\nAuthorization: " + mitmPhKey + "\r\n\r\n", 403},
		{"absolute URL", "GET https://" + other + "/ HTTP/1.1\r\nHost: " + bound + "\r\n\r\n", 403},
		{"default port", "GET / HTTP/1.1\r\nHost: " + mitmBound + "\r\n\r\n", 403},
		{"http URL", "GET http://" + bound + "/ HTTP/1.1\r\nHost: " + bound + "\r\n\r\n", 403},
		{"no Host", "GET / HTTP/1.0\r\n\r\n", 403},
		{"network-path URL", "GET //" + other + "/ HTTP/1.1\r\nHost: " + other + "\r\n\r\n", 403},
		{"CONNECT", "CONNECT " + other + " HTTP/1.1\r\nHost: " + other + "\r\n\r\n", 403},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: " + bound + "\r\nHost: " + other + "\r\n\r\n", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := e.tunnel(mitmBound)
			if _, err := io.WriteString(tc, tt.req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("X-Airlock-Egress") != "denied" {
				t.Errorf("got %s (X-Airlock-Egress %q), want %d denied", resp.Status, resp.Header.Get("X-Airlock-Egress"), tt.status)
			}
		})
	}
	if n := len(e.seen.all()); n != 0 {
		t.Errorf("the server saw %d requests, want none", n)
	}
}

func TestMITMUnboundHostNotIntercepted(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	c := e.client(e.upRoots) // trusts the upstream, not the sandbox CA
	resp, _ := mitmDo(t, c, mitmGet(t, e.url(mitmOther, "/echo"), "Authorization", mitmPhKey))
	if is := resp.TLS.PeerCertificates[0].Issuer.CommonName; is != "airlock test upstream CA" {
		t.Errorf("certificate from %q, want the upstream's own", is)
	}
	if got := e.seen.last(t).Header.Get("Authorization"); got != mitmPhKey {
		t.Errorf("Authorization = %q, want the placeholder untouched", got)
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	e.events.wait(t, "tunnel", func(e Event) bool { return e.Protocol == "connect" })
	for _, ev := range e.events.all() {
		if ev.Kind != "" || ev.Protocol == "https" {
			t.Errorf("unexpected event for an unbound tunnel: %+v", ev)
		}
	}
}

// Without Config.RootCAs the test upstream's CA is unknown: the proxy
// must refuse it rather than hand it the value.
func TestMITMVerifiesUpstream(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{noRootCAs: true})
	e.setSecrets(e.keyBinding())
	resp, body := mitmDo(t, e.client(e.sandboxRoots()), mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Errorf("got %s %q, want 502 naming the certificate", resp.Status, body)
	}
	if n := len(e.seen.all()); n != 0 {
		t.Errorf("the server saw %d requests, want none", n)
	}
	for _, ev := range e.events.all() {
		if ev.Kind == KindSecretInjected {
			t.Errorf("injected into an unverified upstream: %+v", ev)
		}
	}
}

func TestMITMUpgrade(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	tc := e.tunnel(mitmBound)
	fmt.Fprintf(tc, "GET /upgrade HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: %s\r\n\r\n", e.hostPort(mitmBound), mitmPhKey)
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Echo-Authorization") != mitmPhKey {
		t.Fatalf("got %s, echo %q; want 101 with the placeholder", resp.Status, resp.Header.Get("X-Echo-Authorization"))
	}
	if got := e.seen.last(t).Header.Get("Authorization"); got != string(mitmValKey) {
		t.Errorf("server saw %q, want the value", got)
	}
	if _, err := io.WriteString(tc, "ping "+mitmPhKey); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("ping "+mitmPhKey))
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping "+mitmPhKey {
		t.Errorf("after the upgrade: %q, %v; want the bytes echoed untouched", buf, err)
	}
}

// A request event counts the request and answer as the sandbox sent and
// got them, decrypted; the TLS bytes go to the tunnel's event.
func TestMITMRequestBytes(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	tc := e.tunnel(mitmBound)
	req := fmt.Sprintf("GET /echo HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n\r\n", e.hostPort(mitmBound), mitmPhKey)
	io.WriteString(tc, req)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	ev := e.events.wait(t, "request", func(e Event) bool { return e.Protocol == "https" && e.Kind == "" })
	if ev.BytesUp != int64(len(req)) || ev.BytesDown < 100 {
		t.Errorf("bytes up %d down %d, want %d and an answer", ev.BytesUp, ev.BytesDown, len(req))
	}
	tc.Close()
	tun := e.events.wait(t, "tunnel", func(e Event) bool { return e.Protocol == "connect" })
	if tun.Decision != Allowed || tun.Reason != "" || tun.BytesUp <= ev.BytesUp {
		t.Errorf("tunnel event %+v, want allowed, counting TLS bytes", tun)
	}
}
