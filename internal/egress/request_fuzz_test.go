package egress

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"testing"
)

// FuzzRequestTarget feeds raw bytes through the HTTP listener's parsing
// path: peekHosts, http.ReadRequest, requestTarget. A target it accepts is
// one the allow-list is asked about, so it must be a host ParseHost agrees
// with, and (for plain HTTP) the one Host the request carries, as both the
// proxy's own peek and textproto read the head.
func FuzzRequestTarget(f *testing.F) {
	for _, s := range []string{
		"GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
		"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n",
		"GET http://[::1]:80/ HTTP/1.1\r\nHost: [::1]\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.1\nhost: A.TEST.\n\n",
		"GET http://a.test/ HTTP/1.1\n\r\nHost: a.test\r\n\r\n",
		"GET http://0x7f000001:0080/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://u:p@a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test/ HTTP/1.0\r\n\r\n",
		"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n",
		"CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n",
		"CONNECT 2130706433:22 HTTP/1.1\r\n\r\n",
		"CONNECT a.test HTTP/1.1\r\n\r\n",
		"CONNECT a.test:+443 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nHost: A.TEST.\r\n\r\n",
		"POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nHost:",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), maxHead)
		hosts, err := peekHosts(br)
		if err != nil {
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		tg, err := requestTarget(req, hosts)
		if err != nil {
			return
		}
		name, ip, err := ParseHost(tg.host())
		if err != nil || name != tg.name || ip != tg.ip {
			t.Fatalf("target %+v: ParseHost(%q) = %q, %v, %v", tg, tg.host(), name, ip, err)
		}
		if (tg.name == "") == !tg.ip.IsValid() {
			t.Fatalf("target %+v: want a name or an ip, not both or neither", tg)
		}
		if tg.port < 1 || tg.port > 65535 {
			t.Fatalf("target %+v: port out of range", tg)
		}
		if req.Method == http.MethodConnect {
			return
		}
		if len(hosts) != 1 {
			t.Fatalf("target %+v accepted with Host headers %q", tg, hosts)
		}
		for what, h := range map[string]string{"peeked Host": hosts[0], "forwarded Host": req.Host} {
			ht, err := parseHostPort(h, 80)
			if err != nil || !ht.sameHost(tg) || ht.port != tg.port {
				t.Fatalf("target %+v accepted, but the %s %q is %+v, %v", tg, what, h, ht, err)
			}
		}
		// What textproto (and so net/http) reads as the head must hold the
		// same single Host header the peek saw.
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
		if _, err := tp.ReadLine(); err != nil {
			t.Fatalf("request line unreadable after ReadRequest accepted it: %v", err)
		}
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("head unreadable after ReadRequest accepted it: %v", err)
		}
		if got := hdr.Values("Host"); len(got) != 1 || got[0] != hosts[0] {
			t.Fatalf("target %+v accepted on peeked Host headers %q, but the head holds %q", tg, hosts, got)
		}
	})
}

// FuzzSOCKSRequest: whatever a client sends after the greeting, a request
// the proxy acts on names one host, by name or address, and a real port.
func FuzzSOCKSRequest(f *testing.F) {
	for _, b := range [][]byte{
		{5, 1, 0, 1, 127, 0, 0, 1, 0, 80},
		{5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 1, 187},
		append(append([]byte{5, 1, 0, 3, 8}, "pypi.org"...), 1, 187),
		append(append([]byte{5, 1, 0, 3, 10}, "2130706433"...), 0, 22),
		append(append([]byte{5, 1, 0, 3, 10}, " pypi.org "...), 1, 187),
		{5, 1, 0, 3, 0, 0, 80},
		{5, 2, 0, 1, 1, 2, 3, 4, 0, 80},
		{5, 1, 0, 1, 1, 2, 3, 4, 0, 0},
		{5, 1, 0, 9, 1, 2, 3, 4, 0, 80},
		{4, 1, 0, 1},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tg, err := readSOCKSRequest(bytes.NewReader(data))
		if err != nil {
			return
		}
		if tg.port < 1 || tg.port > 65535 {
			t.Fatalf("target %+v: port out of range", tg)
		}
		if (tg.name == "") == !tg.ip.IsValid() {
			t.Fatalf("target %+v: want a name or an ip, not both or neither", tg)
		}
		if tg.ip.Is4In6() || tg.ip.Zone() != "" {
			t.Fatalf("target %+v: address not unmapped or with a zone", tg)
		}
		if tg.name != "" {
			if n, ip, err := ParseHost(tg.name); err != nil || n != tg.name || ip.IsValid() {
				t.Fatalf("target %+v: ParseHost(%q) = %q, %v, %v", tg, tg.name, n, ip, err)
			}
		}
	})
}
