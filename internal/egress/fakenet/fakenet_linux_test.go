package fakenet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// client talks HTTP(S) to the fake internet. It never uses a proxy from the
// environment (that would send test traffic off the machine), opens one
// connection per request so Hits counts requests, and with dialTo set
// connects there whatever the URL's host, as a resolver-free test would.
func client(n *Net, dialTo string) *http.Client {
	d := &net.Dialer{}
	return &http.Client{
		Timeout: 30 * time.Second, // a hang guard, not an assertion
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dialTo != "" {
					addr = dialTo
				}
				return d.DialContext(ctx, network, addr)
			},
			TLSClientConfig:   &tls.Config{RootCAs: n.CA},
			DisableKeepAlives: true,
		},
	}
}

func get(t *testing.T, c *http.Client, url, host string) (string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", url, host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %q %v", url, resp.Status, body, err)
	}
	return string(body), resp.Header
}

func TestResolver(t *testing.T) {
	n := Start(t)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, n.DNS)
	}}
	lookup := func(name string) string {
		t.Helper()
		ips, err := r.LookupIP(context.Background(), "ip4", name)
		if err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
		if len(ips) != 1 {
			t.Fatalf("lookup %s = %v, want one address", name, ips)
		}
		return ips[0].String()
	}
	for name, want := range map[string]string{
		AllowedName: AllowedIP, WWWAllowedName: AllowedIP, "ALLOWED.test": AllowedIP,
		DeniedName: DeniedIP, MetaName: MetaIP, LoopName: "127.0.0.1", PrivateName: PrivateIP,
	} {
		if got := lookup(name); got != want {
			t.Errorf("lookup %s = %s, want %s", name, got, want)
		}
	}
	if got := lookup(RebindName); got != RebindIP {
		t.Errorf("first lookup of %s = %s, want %s", RebindName, got, RebindIP)
	}
	for range 2 {
		if got := lookup(RebindName); got != "127.0.0.1" {
			t.Errorf("later lookup of %s = %s, want 127.0.0.1", RebindName, got)
		}
	}
	ips, err := r.LookupNetIP(context.Background(), "ip4", MixedName)
	if err != nil {
		t.Fatalf("lookup %s: %v", MixedName, err)
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	if want := []netip.Addr{netip.MustParseAddr(PrivateIP), netip.MustParseAddr(AllowedIP)}; !slices.Equal(ips, want) {
		t.Errorf("lookup %s = %v, want %v", MixedName, ips, want)
	}
	var dnsErr *net.DNSError
	if _, err := r.LookupIP(context.Background(), "ip4", "nowhere.test."); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("lookup nowhere.test: %v, want not found", err)
	}

	if got := n.Queries(AllowedName); got != 2 { // allowed.test and ALLOWED.test
		t.Errorf("Queries(%s) = %d, want 2", AllowedName, got)
	}
	if got := n.Queries(RebindName); got != 3 {
		t.Errorf("Queries(%s) = %d, want 3", RebindName, got)
	}
	if got := n.Queries("never.test"); got != 0 {
		t.Errorf("Queries(never.test) = %d, want 0", got)
	}
	all := n.AllQueries()
	if got := all[len(all)-1]; got != "nowhere.test" {
		t.Errorf("last query %q, want nowhere.test", got)
	}
	if n.Hits(n.DNS) < len(all) {
		t.Errorf("Hits(%s) = %d, fewer than the %d questions seen", n.DNS, n.Hits(n.DNS), len(all))
	}
}

func TestHTTP(t *testing.T) {
	n := Start(t)
	c := client(n, "")
	for _, tg := range targets {
		for _, port := range []string{"80", "8080"} {
			addr := net.JoinHostPort(tg.ip, port)
			body, h := get(t, c, "http://"+addr+"/", tg.names[0])
			if want := "hello from " + tg.names[0] + "\n"; body != want {
				t.Errorf("GET %s: body %q, want %q", addr, body, want)
			}
			if got := h.Get("X-Seen-Host"); got != tg.names[0] {
				t.Errorf("GET %s: X-Seen-Host %q, want %q", addr, got, tg.names[0])
			}
			if got := n.Hits(addr); got != 1 {
				t.Errorf("Hits(%s) = %d after one request, want 1", addr, got)
			}
		}
	}
	// Nothing above touched HTTPS or echo: a server never dialled reports 0.
	if got := n.Hits(DeniedIP + ":443"); got != 0 {
		t.Errorf("Hits(%s:443) = %d, want 0", DeniedIP, got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Hits of an address nothing serves did not panic")
		}
	}()
	n.Hits("203.0.113.99:80")
}

func TestHTTPS(t *testing.T) {
	n := Start(t)
	c := client(n, AllowedIP+":443")
	for _, name := range []string{AllowedName, WWWAllowedName} {
		body, h := get(t, c, "https://"+name+"/", name)
		if body != "hello from allowed.test\n" || h.Get("X-Seen-Host") != name {
			t.Errorf("GET https://%s: %q, X-Seen-Host %q", name, body, h.Get("X-Seen-Host"))
		}
	}
	// The certificate names only the address's own names.
	if _, err := client(n, DeniedIP+":443").Get("https://" + AllowedName + "/"); err == nil {
		t.Error("denied.test's server presented a certificate valid for allowed.test")
	}
	if got := n.Hits(AllowedIP + ":443"); got != 2 {
		t.Errorf("Hits = %d, want 2", got)
	}
	// A test's own handler serves its prefix; the rest stays as it was.
	n.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api "+r.URL.Path) }))
	if body, _ := get(t, c, "https://"+AllowedName+"/api/x", AllowedName); body != "api /api/x" {
		t.Errorf("handled path answered %q", body)
	}
	if body, _ := get(t, c, "https://"+AllowedName+"/apix", AllowedName); body != "hello from allowed.test\n" {
		t.Errorf("other path answered %q", body)
	}
}

func TestEchoAndUpgrade(t *testing.T) {
	n := Start(t)
	c, err := net.Dial("tcp", net.JoinHostPort(PrivateIP, "7"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, line := range []string{"ping\n", "pong\n"} {
		if _, err := io.WriteString(c, line); err != nil {
			t.Fatal(err)
		}
		if got, err := br.ReadString('\n'); got != line {
			t.Fatalf("echo returned %q, %v; want %q", got, err, line)
		}
	}
	if got := n.Hits(PrivateIP + ":7"); got != 1 {
		t.Errorf("Hits(%s:7) = %d, want 1", PrivateIP, got)
	}

	ws, err := net.Dial("tcp", net.JoinHostPort(AllowedIP, "80"))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: allowed.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\nearly")
	wsr := bufio.NewReader(ws)
	resp, err := http.ReadResponse(wsr, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	// RFC 6455's own example key and accept value.
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("Sec-WebSocket-Accept %q", got)
	}
	buf := make([]byte, len("early"))
	if _, err := io.ReadFull(wsr, buf); err != nil || string(buf) != "early" {
		t.Fatalf("upgraded echo %q, %v", buf, err)
	}
}

// TestDNSOverTCP asks the resolver directly, over TCP, for what a stub
// resolver hides: the TTLs and the empty NOERROR answer to AAAA.
func TestDNSOverTCP(t *testing.T) {
	n := Start(t)
	c, err := net.Dial("tcp", n.DNS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		t.Helper()
		q := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: 7, RecursionDesired: true},
			Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}},
		}
		b, err := q.AppendPack([]byte{0, 0})
		if err != nil {
			t.Fatal(err)
		}
		b[0], b[1] = byte((len(b)-2)>>8), byte(len(b)-2)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, int(l[0])<<8|int(l[1]))
		if _, err := io.ReadFull(c, resp); err != nil {
			t.Fatal(err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatal(err)
		}
		if m.ID != 7 || !m.Response {
			t.Fatalf("%s: bad response header %+v", name, m.Header)
		}
		return m
	}
	if m := ask("allowed.test.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("AAAA allowed.test: %v with %d answers, want NOERROR and none", m.RCode, len(m.Answers))
	}
	if m := ask("rebind.test.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("AAAA rebind.test: %v with %d answers, want NOERROR and none", m.RCode, len(m.Answers))
	}
	for _, want := range []string{RebindIP, "127.0.0.1"} {
		m := ask("rebind.test.", dnsmessage.TypeA)
		if len(m.Answers) != 1 || m.Answers[0].Header.TTL != 0 {
			t.Fatalf("A rebind.test: %+v, want one answer with TTL 0", m.Answers)
		}
		a := m.Answers[0].Body.(*dnsmessage.AResource).A
		if got := net.IP(a[:]).String(); got != want {
			t.Errorf("A rebind.test = %s, want %s", got, want)
		}
	}
	if m := ask("nowhere.test.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("A nowhere.test: %v, want NXDOMAIN", m.RCode)
	}
	if got := n.Hits(n.DNS); got != 1 {
		t.Errorf("Hits(%s) = %d after one TCP connection, want 1", n.DNS, got)
	}
}
