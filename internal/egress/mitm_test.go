package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	mitmPhKey  = "airlock-ph-" + strings.Repeat("0a", 20)
	mitmValKey = []byte("sk-test-REAL-VALUE-1234567890")
	mitmPhTok  = "airlock-ph-" + strings.Repeat("1b", 20)
	mitmValTok = []byte("ghp-REAL-TOKEN-abcdef")
)

func (e *mitmEnv) hostPort(host string) string { return fmt.Sprintf("%s:%d", host, e.tlsPort) }

func (e *mitmEnv) keyBinding() Binding {
	return Binding{Name: "API_KEY", Placeholder: mitmPhKey, Value: mitmValKey, Hosts: []string{e.hostPort(mitmBound)}}
}

// mitmDo sends a request and returns the answer with its body read.
func mitmDo(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

func mitmGet(t *testing.T, url string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// mitmEv is what a test checks of an event.
type mitmEv struct {
	Kind, Secret, Protocol, Host string
	Port                         int
	Decision, Reason             string
	Status                       int
}

func mitmSummary(e Event) mitmEv {
	return mitmEv{e.Kind, e.Secret, e.Protocol, e.Host, e.Port, e.Decision, e.Reason, e.Status}
}

func mitmKind(k string) func(Event) bool { return func(e Event) bool { return e.Kind == k } }

func TestMITMInjectsHeadersAndScrubsAnswers(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	resp, body := mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"),
		"Authorization", "Bearer "+mitmPhKey,
		"Cookie", "session="+mitmPhKey+"; other=1",
		"X-Custom", "a "+mitmPhKey+" b "+mitmPhKey,
		"Accept-Encoding", "gzip"))

	h := e.seen.last(t).Header
	got := map[string]string{}
	for _, k := range []string{"Authorization", "Cookie", "X-Custom", "Accept-Encoding"} {
		got[k] = h.Get(k)
	}
	want := map[string]string{
		"Authorization":   "Bearer " + string(mitmValKey),
		"Cookie":          "session=" + string(mitmValKey) + "; other=1",
		"X-Custom":        "a " + string(mitmValKey) + " b " + string(mitmValKey),
		"Accept-Encoding": "identity", // so that answers can be scrubbed
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers the server saw (-want +got):\n%s", diff)
	}
	// The server echoes the value; the sandbox must mitmGet the placeholder.
	if got := resp.Header.Get("X-Echo-Authorization"); got != "Bearer "+mitmPhKey {
		t.Errorf("echoed header = %q, want the placeholder", got)
	}
	if !strings.Contains(body, "authorization=Bearer "+mitmPhKey+"\n") || strings.Contains(body, string(mitmValKey)) {
		t.Errorf("echoed body = %q, want the placeholder, not the value", body)
	}
	if is := resp.TLS.PeerCertificates[0].Issuer.CommonName; is != "Airlock sandbox sb-mitm CA" {
		t.Errorf("sandbox saw a certificate from %q, want the sandbox CA", is)
	}
	ev := e.events.wait(t, "secret.injected", mitmKind(KindSecretInjected))
	wantEv := mitmEv{KindSecretInjected, "API_KEY", "https", mitmBound, e.tlsPort, Allowed, "replaced in headers", 0}
	if diff := cmp.Diff(wantEv, mitmSummary(ev)); diff != "" {
		t.Errorf("injected event (-want +got):\n%s", diff)
	}
	ev = e.events.wait(t, "request", func(e Event) bool { return e.Protocol == "https" && e.Kind == "" })
	if diff := cmp.Diff(mitmEv{"", "", "https", mitmBound, e.tlsPort, Allowed, "", 200}, mitmSummary(ev)); diff != "" {
		t.Errorf("request event (-want +got):\n%s", diff)
	}
	if ev.BytesUp == 0 || ev.BytesDown == 0 {
		t.Errorf("request event counts no bytes: %+v", ev)
	}

	// Answers without a body keep the tunnel usable.
	head, _ := http.NewRequest(http.MethodHead, e.url(mitmBound, "/echo"), nil)
	if resp, _ := mitmDo(t, c, head); resp.StatusCode != 200 {
		t.Errorf("HEAD: %s", resp.Status)
	}
	if resp, _ := mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/empty"))); resp.StatusCode != 204 {
		t.Errorf("GET /empty: %s", resp.Status)
	}
	if _, body := mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey)); !strings.Contains(body, "authorization="+mitmPhKey+"\n") {
		t.Errorf("after HEAD and 204: body %q", body)
	}
}

func TestMITMBody(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	key := e.keyBinding()
	key.Body = true
	tok := Binding{Name: "TOKEN", Placeholder: mitmPhTok, Value: mitmValTok, Hosts: []string{e.hostPort(mitmBound)}}
	e.setSecrets(key, tok)
	// Large enough to cross the proxy's and TLS's chunk boundaries many
	// times, with placeholders at every offset modulo a prime.
	var sb strings.Builder
	sb.WriteString(`{"key":"` + mitmPhKey + `","token":"` + mitmPhTok + `"}`)
	for i := 0; sb.Len() < 300<<10; i++ {
		sb.WriteString(strings.Repeat("x", i%997))
		sb.WriteString(mitmPhKey)
	}
	in := sb.String()
	req, _ := http.NewRequest(http.MethodPost, e.url(mitmBound, "/echo"), strings.NewReader(in))
	resp, body := mitmDo(t, e.client(e.sandboxRoots()), req)
	if resp.StatusCode != 200 {
		t.Fatalf("POST: %s", resp.Status)
	}
	seen := e.seen.last(t)
	if want := strings.ReplaceAll(in, mitmPhKey, string(mitmValKey)); seen.Body != want {
		t.Errorf("server saw a body of %d bytes, want %d with every placeholder replaced", len(seen.Body), len(want))
	}
	if diff := cmp.Diff([]string{"chunked"}, seen.TE); diff != "" {
		t.Errorf("transfer encoding upstream (-want +got):\n%s", diff)
	}
	// Body is off for TOKEN: its placeholder stays.
	if !strings.Contains(seen.Body, `"token":"`+mitmPhTok+`"`) {
		t.Errorf("TOKEN was replaced in the body although Body is false")
	}
	if want := "authorization=\ncookie=\nbody=" + in + "\n"; body != want {
		t.Errorf("echoed body not scrubbed back to the placeholders (len %d, want %d)", len(body), len(want))
	}
	ev := e.events.wait(t, "secret.injected", mitmKind(KindSecretInjected))
	if diff := cmp.Diff(mitmEv{KindSecretInjected, "API_KEY", "https", mitmBound, e.tlsPort, Allowed, "replaced in body", 0}, mitmSummary(ev)); diff != "" {
		t.Errorf("injected event (-want +got):\n%s", diff)
	}
}

func TestMITMAddsHeader(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	key := e.keyBinding()
	key.Header, key.Format = "authorization", "Bearer {value}"
	tok := Binding{Name: "TOKEN", Placeholder: mitmPhTok, Value: mitmValTok, Hosts: []string{e.hostPort(mitmBound)}, Header: "X-Api-Key"}
	e.setSecrets(key, tok)
	c := e.client(e.sandboxRoots())
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo")))
	h := e.seen.last(t).Header
	got := []string{h.Get("Authorization"), h.Get("X-Api-Key")}
	if diff := cmp.Diff([]string{"Bearer " + string(mitmValKey), string(mitmValTok)}, got); diff != "" {
		t.Errorf("added headers (-want +got):\n%s", diff)
	}
	ev := e.events.wait(t, "secret.injected", func(e Event) bool { return e.Kind == KindSecretInjected && e.Secret == "API_KEY" })
	if ev.Reason != "added header Authorization" {
		t.Errorf("reason = %q", ev.Reason)
	}
	// A header the request has is left alone.
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", "Basic dXNlcjpwYXNz"))
	if got := e.seen.last(t).Header.Get("Authorization"); got != "Basic dXNlcjpwYXNz" {
		t.Errorf("Authorization = %q, want the request's own", got)
	}
}

func TestMITMMisdirected(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	tok := Binding{Name: "TOKEN", Placeholder: mitmPhTok, Value: mitmValTok, Hosts: []string{"*.test:" + fmt.Sprint(e.tlsPort)}}
	key := e.keyBinding() // bound.test only
	e.setSecrets(key, tok)
	mitmDo(t, e.client(e.sandboxRoots()), mitmGet(t, e.url(mitmOther, "/echo"), "Authorization", "Bearer "+mitmPhKey, "X-Token", mitmPhTok))
	h := e.seen.last(t).Header
	if diff := cmp.Diff([]string{"Bearer " + mitmPhKey, string(mitmValTok)}, []string{h.Get("Authorization"), h.Get("X-Token")}); diff != "" {
		t.Errorf("other.test saw (-want +got):\n%s", diff)
	}
	ev := e.events.wait(t, "secret.misdirected", mitmKind(KindSecretMisdirected))
	want := mitmEv{KindSecretMisdirected, "API_KEY", "https", mitmOther, e.tlsPort, Denied, "not a bound host: placeholder left in headers", 0}
	if diff := cmp.Diff(want, mitmSummary(ev)); diff != "" {
		t.Errorf("misdirected event (-want +got):\n%s", diff)
	}
	e.events.wait(t, "TOKEN injected", func(e Event) bool { return e.Kind == KindSecretInjected && e.Secret == "TOKEN" })
}

func TestMITMRotation(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	if got := e.seen.last(t).Header.Get("Authorization"); got != string(mitmValKey) {
		t.Fatalf("before rotation: %q", got)
	}
	rotated := e.keyBinding()
	rotated.Value = []byte("sk-test-ROTATED-VALUE-987")
	e.setSecrets(rotated)
	var reused bool
	req := mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
	resp, body := mitmDo(t, c, req)
	if !reused {
		t.Error("the second request did not reuse the intercepted tunnel")
	}
	if got := e.seen.last(t).Header.Get("Authorization"); got != string(rotated.Value) {
		t.Errorf("after rotation the server saw %q, want the new value", got)
	}
	if got := resp.Header.Get("X-Echo-Authorization"); got != mitmPhKey || strings.Contains(body, string(rotated.Value)) {
		t.Errorf("new value not scrubbed: header %q, body %q", got, body)
	}
}

func TestMITMSecretsCleared(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	if err := e.sb.SetSecrets(nil, nil); err != nil {
		t.Fatal(err)
	}
	// A tunnel intercepted before goes on, with nothing to inject.
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	if got := e.seen.last(t).Header.Get("Authorization"); got != mitmPhKey {
		t.Errorf("old tunnel after clearing: server saw %q, want the placeholder", got)
	}
	// New tunnels are not intercepted: the upstream's certificate shows.
	if _, err := e.client(e.sandboxRoots()).Do(mitmGet(t, e.url(mitmBound, "/echo"))); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("new tunnel trusting only the sandbox CA: err = %v, want a certificate error", err)
	}
	resp, _ := mitmDo(t, e.client(e.upRoots), mitmGet(t, e.url(mitmBound, "/echo"), "Authorization", mitmPhKey))
	if is := resp.TLS.PeerCertificates[0].Issuer.CommonName; is != "airlock test upstream CA" {
		t.Errorf("certificate from %q, want the upstream's own", is)
	}
	if got := e.seen.last(t).Header.Get("Authorization"); got != mitmPhKey {
		t.Errorf("server saw %q, want the placeholder", got)
	}
}

func TestPlainHTTPNeverInjects(t *testing.T) {
	e := newMitmEnv(t, mitmOptions{})
	e.setSecrets(e.keyBinding())
	c := e.client(nil)
	for _, tt := range []struct{ host, reason string }{
		{mitmBound, "plain http"},
		{mitmOther, "not a bound host"},
	} {
		url := fmt.Sprintf("http://%s:%d/echo", tt.host, e.plainPort)
		mitmDo(t, c, mitmGet(t, url, "Authorization", "Bearer "+mitmPhKey))
		if got := e.seen.last(t).Header.Get("Authorization"); got != "Bearer "+mitmPhKey {
			t.Errorf("%s: server saw %q, want the placeholder", tt.host, got)
		}
		ev := e.events.wait(t, "misdirected "+tt.host, func(e Event) bool { return e.Kind == KindSecretMisdirected && e.Host == tt.host })
		want := mitmEv{KindSecretMisdirected, "API_KEY", "http", tt.host, e.plainPort, Denied, tt.reason, 0}
		if diff := cmp.Diff(want, mitmSummary(ev)); diff != "" {
			t.Errorf("%s: event (-want +got):\n%s", tt.host, diff)
		}
	}
}
