package e2b

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseHost(t *testing.T) {
	const domain = "e2b.example.com"
	for _, tc := range []struct {
		host, domain string
		id           string
		port         int
	}{
		{host: "8000-sb-0123456789abcdef.e2b.example.com", domain: domain, id: "sb-0123456789abcdef", port: 8000},
		{host: "8000-sb-0123456789abcdef.e2b.example.com:7070", domain: domain, id: "sb-0123456789abcdef", port: 8000},
		{host: "49983-SB-1.E2B.Example.COM.", domain: domain, id: "sb-1", port: 49983},
		{host: "1-x.e2b.example.com", domain: "E2B.example.com.", id: "x", port: 1},
		{host: "65535-x.e2b.example.com", domain: domain, id: "x", port: 65535},
		// Not a sandbox's host: these are the server's own.
		{host: "e2b.example.com", domain: domain},
		{host: "api.e2b.example.com", domain: domain},
		{host: "8000-sb-1.e2b.example.com", domain: ""},
		{host: "8000-sb-1.other.com", domain: domain},
		{host: "8000-sb-1.evile2b.example.com", domain: domain},
		{host: "8000-sb-1.e2b.example.com.evil.net", domain: domain},
		{host: "8000-sb.1.e2b.example.com", domain: domain},
		{host: "0-sb-1.e2b.example.com", domain: domain},
		{host: "08000-sb-1.e2b.example.com", domain: domain},
		{host: "65536-sb-1.e2b.example.com", domain: domain},
		{host: "+80-sb-1.e2b.example.com", domain: domain},
		{host: "8000-.e2b.example.com", domain: domain},
		{host: "8000.e2b.example.com", domain: domain},
		{host: "8000-sb_1.e2b.example.com", domain: domain},
		{host: "8000-sb%2f1.e2b.example.com", domain: domain},
		{host: "[::1]:7070", domain: domain},
		{host: "", domain: domain},
	} {
		id, port, ok := parseHost(tc.host, tc.domain)
		if ok != (tc.id != "") || id != tc.id || port != tc.port {
			t.Errorf("parseHost(%q, %q) = %q, %d, %v; want %q, %d", tc.host, tc.domain, id, port, ok, tc.id, tc.port)
		}
	}
}

// FuzzParseHost: whatever the Host header, parsing never panics, and what
// it accepts is a port and an id that name the same host again.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"8000-sb-1.e2b.test", "8000-sb-1.e2b.test:80", "e2b.test", "-.e2b.test", "[::1]:1", "1-a.b.e2b.test."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		id, port, ok := parseHost(host, "e2b.test")
		if !ok {
			return
		}
		if !validID(id) || port < 1 || port > 65535 {
			t.Fatalf("parseHost(%q) accepted id %q port %d", host, id, port)
		}
		if id2, port2, ok := parseHost(fmt.Sprintf("%d-%s.e2b.test", port, id), "e2b.test"); !ok || id2 != id || port2 != port {
			t.Fatalf("parseHost(%q) = %q %d, which does not name itself again", host, id, port)
		}
	})
}

func TestCheckDomain(t *testing.T) {
	for d, ok := range map[string]bool{"e2b.example.com": true, "sandboxes.example.com.": true, "E2B.test": true,
		"localhost": false, "": false, "*.e2b.test": false, "https://e2b.test": false, "e2b.test:443": false,
		"e2b.test/x": false, "-a.e2b.test": false, "a..test": false} {
		if err := CheckDomain(d); (err == nil) != ok {
			t.Errorf("CheckDomain(%q) = %v, want ok %v", d, err, ok)
		}
	}
}

// TestOpenPort pins E2B's traffic rules for a request without an Airlock
// credential: public sandboxes are open, token ones need their own token
// (403 without it or with another's), anything else is closed.
func TestOpenPort(t *testing.T) {
	h := NewHandler(Options{TrafficKey: []byte("k1")})
	t.Cleanup(h.Close)
	other := NewHandler(Options{TrafficKey: []byte("k2")})
	t.Cleanup(other.Close)
	keyless := NewHandler(Options{})
	t.Cleanup(keyless.Close)
	tok := h.trafficToken("sb-1")
	public := map[string]string{trafficMeta: trafficPublic}
	private := map[string]string{trafficMeta: trafficToken}
	for _, tc := range []struct {
		name  string
		h     *Handler
		md    map[string]string
		token string
		want  int // 0: let through
	}{
		{name: "public", h: h, md: public},
		{name: "public ignores a token", h: h, md: public, token: "junk"},
		{name: "token", h: h, md: private, token: tok},
		{name: "token missing", h: h, md: private, want: 403},
		{name: "token wrong", h: h, md: private, token: tok + "0", want: 403},
		{name: "another sandbox's token", h: h, md: private, token: h.trafficToken("sb-2"), want: 403},
		{name: "another server key's token", h: other, md: private, token: tok, want: 403},
		{name: "no key: no token is valid", h: keyless, md: private, token: keyless.trafficToken("sb-1"), want: 403},
		{name: "native sandbox", h: h, md: nil, token: tok, want: 401},
		{name: "unknown rule", h: h, md: map[string]string{trafficMeta: "maybe"}, want: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.token != "" {
				r.Header.Set("e2b-traffic-access-token", tc.token)
			}
			err := tc.h.openPort("sb-1", r, tc.md)
			got := 0
			if err != nil {
				got = err.(*refusal).PortStatus()
			}
			if got != tc.want {
				t.Errorf("openPort = %v (%d), want %d", err, got, tc.want)
			}
		})
	}
	if !strings.HasPrefix(tok, "att_") || len(tok) != 4+64 || tok != h.trafficToken("sb-1") {
		t.Errorf("traffic token %q: want att_ and 64 hex digits, the same each time", tok)
	}
}

func TestWithTraffic(t *testing.T) {
	no, yes := false, true
	mask := "${PORT}-x.example.com"
	type network = struct {
		AllowOut           []string        `json:"allowOut"`
		DenyOut            []string        `json:"denyOut"`
		EgressProxy        json.RawMessage `json:"egressProxy"`
		Rules              json.RawMessage `json:"rules"`
		AllowPublicTraffic *bool           `json:"allowPublicTraffic"`
		MaskRequestHost    *string         `json:"maskRequestHost"`
	}
	in := map[string]string{"a": "b"}
	for _, tc := range []struct {
		name string
		body createBody
		md   map[string]string
		want map[string]string
		err  string
	}{
		{name: "public by default", md: in, want: map[string]string{"a": "b", trafficMeta: trafficPublic}},
		{name: "no metadata", want: map[string]string{trafficMeta: trafficPublic}},
		{name: "public asked", body: createBody{Network: &network{AllowPublicTraffic: &yes}}, want: map[string]string{trafficMeta: trafficPublic}},
		{name: "private", body: createBody{Network: &network{AllowPublicTraffic: &no}}, md: in, want: map[string]string{"a": "b", trafficMeta: trafficToken}},
		{name: "reserved key", md: map[string]string{trafficMeta: trafficPublic}, err: "reserved"},
		{name: "mask", body: createBody{Network: &network{MaskRequestHost: &mask}}, err: "maskRequestHost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.body.withTraffic(tc.md)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("metadata (-want +got):\n%s", d)
			}
		})
	}
	if len(in) != 1 {
		t.Errorf("withTraffic changed its argument: %v", in)
	}
}

// TestTrafficToken: a sandbox created without public traffic answers
// create and connect with its trafficAccessToken, the same each time, and
// E2B's getInfo shows allowPublicTraffic, not the metadata key that holds
// it; a public sandbox has no token.
func TestTrafficToken(t *testing.T) {
	f := newFacade(t)
	f.h.opts.TrafficKey, f.h.opts.Domain = []byte("key"), "e2b.test"
	var private, public sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"base","metadata":{"m":"1"},"network":{"allowPublicTraffic":false}}`, &private); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if private.Domain == nil || *private.Domain != "e2b.test" {
		t.Errorf("create answered domain %v, want the server's e2b.test", private.Domain)
	}
	if private.TrafficAccessToken != f.h.trafficToken(private.SandboxID) {
		t.Errorf("create answered trafficAccessToken %q, want the sandbox's", private.TrafficAccessToken)
	}
	var again sandboxBody
	if st := f.api("POST", "/sandboxes/"+private.SandboxID+"/connect", `{}`, &again); st != 200 || again.TrafficAccessToken != private.TrafficAccessToken {
		t.Errorf("connect: %d, trafficAccessToken %q", st, again.TrafficAccessToken)
	}
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"base"}`, &public); st != 201 || public.TrafficAccessToken != "" {
		t.Errorf("create with public traffic: %d, trafficAccessToken %q", st, public.TrafficAccessToken)
	}
	for _, tc := range []struct {
		id     string
		public bool
		md     map[string]string
	}{{private.SandboxID, false, map[string]string{"m": "1"}}, {public.SandboxID, true, map[string]string{}}} {
		var got sandboxBody
		if st := f.api("GET", "/sandboxes/"+tc.id, "", &got); st != 200 {
			t.Fatalf("get: %d", st)
		}
		if got.Network == nil || got.Network.AllowPublicTraffic == nil || *got.Network.AllowPublicTraffic != tc.public || !cmp.Equal(got.Metadata, tc.md, cmpopts.EquateEmpty()) || got.TrafficAccessToken != "" {
			t.Errorf("getInfo of %s: network %+v metadata %v token %q; want allowPublicTraffic %v, metadata %v", tc.id, got.Network, got.Metadata, got.TrafficAccessToken, tc.public, tc.md)
		}
	}
	if st := f.api("POST", "/v2/sandboxes", `{"metadata":{"`+trafficMeta+`":"public"}}`, nil); st != 400 {
		t.Errorf("create with the reserved metadata key: %d, want 400", st)
	}
}

// TestPortRouting: at the envd URL, E2b-Sandbox-Port other than envd's
// goes to the port proxy with the path after /envd, the facade's traffic
// rule and E2B's error shape; envd's own port stays the facade's; a host
// name routes as the headers do, the host winning over them.
func TestPortRouting(t *testing.T) {
	var got []PortRequest
	h := NewHandler(Options{APIURL: "http://127.0.0.1:1", TrafficKey: []byte("key"), Ports: func(w http.ResponseWriter, r *http.Request, p PortRequest) {
		got = append(got, p)
		if err := p.Open(r, map[string]string{trafficMeta: trafficToken}); err != nil {
			p.Fail(w, r, err.(*refusal).PortStatus(), err.Error())
			return
		}
		w.WriteHeader(299)
	}})
	t.Cleanup(h.Close)
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	req := func(path string, hdr map[string]string) *http.Request {
		r := httptest.NewRequest("POST", path, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		return r
	}

	w := serve(req("/envd/execute?x=1", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "49999"}))
	var pe portError
	json.Unmarshal(w.Body.Bytes(), &pe)
	if w.Code != 403 || pe != (portError{SandboxID: "sb-1", Code: 403, Message: "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing"}) {
		t.Errorf("without the traffic token: %d %s", w.Code, w.Body)
	}
	if len(got) != 1 || got[0].Sandbox != "sb-1" || got[0].Port != 49999 || got[0].Path != "/execute" || !cmp.Equal(got[0].Drop, portDrop) {
		t.Fatalf("port request %+v", got)
	}
	if w := serve(req("/envd/", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "8000", "e2b-traffic-access-token": h.trafficToken("sb-1")})); w.Code != 299 {
		t.Errorf("with the traffic token: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		path string
		hdr  map[string]string
		want int
	}{
		{"/envd/execute", map[string]string{"E2b-Sandbox-Port": "49999"}, 400},
		{"/envd/execute", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "0"}, 400},
		{"/envd/execute", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "http"}, 400},
		{"/envd/execute", map[string]string{"E2b-Sandbox-Id": "../x", "E2b-Sandbox-Port": "8000"}, 404},
		// envd's own port, and no port at all: the facade's envd routes.
		{"/envd/execute", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "49983"}, 404},
		{"/envd/execute", map[string]string{"E2b-Sandbox-Id": "sb-1"}, 404},
		// Not at the envd URL: the control plane's routes.
		{"/nope", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "8000"}, 501},
		{"/envdx", map[string]string{"E2b-Sandbox-Id": "sb-1", "E2b-Sandbox-Port": "8000"}, 501},
	} {
		got = nil
		if w := serve(req(tc.path, tc.hdr)); w.Code != tc.want || len(got) != 0 {
			t.Errorf("POST %s %v: %d %s (port requests %v), want %d from the facade", tc.path, tc.hdr, w.Code, w.Body, got, tc.want)
		}
	}

	// A host name: the path as sent, the host's sandbox and port.
	r := req("http://8000-sb-2.e2b.test:7070/a%2Fb/c?q=1", map[string]string{"E2b-Sandbox-Id": "sb-9", "E2b-Sandbox-Port": "49983"})
	hr, ok := HostRequest(r, "e2b.test")
	if !ok {
		t.Fatal("HostRequest refused a sandbox host")
	}
	got = nil
	serve(hr)
	if len(got) != 1 || got[0].Sandbox != "sb-2" || got[0].Port != 8000 || got[0].Path != "/a/b/c" || got[0].RawPath != "/a%2Fb/c" {
		t.Errorf("host-named port request %+v", got)
	}
	if r.URL.Path != "/a/b/c" || r.Header.Get("E2b-Sandbox-Id") != "sb-9" {
		t.Errorf("HostRequest changed the request it was given: %s %v", r.URL.Path, r.Header)
	}
	// envd's port on a host name is the facade's envd.
	hr, _ = HostRequest(req("http://49983-sb-2.e2b.test/health", nil), "e2b.test")
	if hr.URL.Path != "/envd/health" || hr.Header.Get("E2b-Sandbox-Id") != "sb-2" {
		t.Errorf("envd host request: %s %v", hr.URL.Path, hr.Header)
	}
	if _, ok := HostRequest(req("http://127.0.0.1:7070/v1/sandboxes", nil), "e2b.test"); ok {
		t.Error("HostRequest took the server's own address")
	}
}
