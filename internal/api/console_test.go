package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// browser sends requests as the console does: with a session cookie, the
// CSRF header and the page's Origin (each can be left off).
type browser struct {
	e              *env
	cookie, origin string
	noCSRF         bool
}

func (b browser) do(method, path, body string) answer {
	b.e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, r)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: b.cookie})
	}
	if !b.noCSRF {
		req.Header.Set(CSRFHeader, "1")
	}
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	resp, err := b.e.srv.Client().Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, out}
}

// signIn exchanges key for a session cookie and checks the cookie's flags.
func (e *env) signIn(key string) (string, consoleSession) {
	e.t.Helper()
	a := browser{e: e, origin: e.srv.URL}.do("POST", "/v1/console/session", `{"key":"`+key+`"}`)
	if a.status != 200 {
		e.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	var cs consoleSession
	if err := json.Unmarshal(a.body, &cs); err != nil {
		e.t.Fatal(err)
	}
	resp := http.Response{Header: a.header}
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || !strings.HasPrefix(c.Value, SessionPrefix) {
				e.t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/, %s prefix", c, SessionPrefix)
			}
			return c.Value, cs
		}
	}
	e.t.Fatalf("sign in set no %s cookie: %v", SessionCookie, a.header)
	return "", cs
}

func TestConsoleSession(t *testing.T) {
	e := newEnv(t)
	aliceSB := e.sandbox(e.alice)
	bobSB := e.sandbox(e.bob)
	cookie, cs := e.signIn(e.alice)
	if cs.Tenant != "alice" || cs.TenantID != "ten_alice" || cs.KeyID != "key_alice" || cs.Admin || !cs.ExpiresAt.After(t0) {
		t.Fatalf("session %+v", cs)
	}
	alice := browser{e: e, cookie: cookie, origin: e.srv.URL}
	if a := alice.do("GET", "/v1/console/session", ""); a.status != 200 || !strings.Contains(string(a.body), `"tenant":"alice"`) {
		t.Fatalf("who am I: %d %s", a.status, a.body)
	}

	// The cookie acts as the key, with the key's rights and no more.
	for _, tc := range []struct {
		name         string
		b            browser
		method, path string
		body         string
		status       int
		code         string
	}{
		{"list", alice, "GET", "/v1/sandboxes", "", 200, ""},
		{"own sandbox", alice, "GET", "/v1/sandboxes/" + aliceSB, "", 200, ""},
		{"exec", alice, "POST", "/v1/sandboxes/" + aliceSB + "/exec", `{"cmd":["true"]}`, 200, ""},
		{"other tenant's sandbox", alice, "GET", "/v1/sandboxes/" + bobSB, "", 404, "not_found"},
		{"other tenant's exec", alice, "POST", "/v1/sandboxes/" + bobSB + "/exec", `{"cmd":["true"]}`, 404, "not_found"},
		{"admin route", alice, "GET", "/v1/tenants", "", 403, "forbidden"},
		{"no origin is fine (same-origin GET)", browser{e: e, cookie: cookie}, "GET", "/v1/sandboxes", "", 200, ""},
		{"change without CSRF header", browser{e: e, cookie: cookie, origin: e.srv.URL, noCSRF: true}, "POST", "/v1/sandboxes/" + aliceSB + "/exec", `{"cmd":["true"]}`, 403, "forbidden"},
		{"delete without CSRF header", browser{e: e, cookie: cookie, noCSRF: true}, "DELETE", "/v1/sandboxes/" + aliceSB, "", 403, "forbidden"},
		{"other origin GET", browser{e: e, cookie: cookie, origin: "http://evil.example"}, "GET", "/v1/sandboxes", "", 403, "forbidden"},
		{"other origin change", browser{e: e, cookie: cookie, origin: "http://127.0.0.1:1"}, "POST", "/v1/sandboxes/" + aliceSB + "/exec", `{"cmd":["true"]}`, 403, "forbidden"},
		{"null origin", browser{e: e, cookie: cookie, origin: "null"}, "GET", "/v1/sandboxes", "", 403, "forbidden"},
		{"forged cookie", browser{e: e, cookie: SessionPrefix + "nope"}, "GET", "/v1/sandboxes", "", 401, "unauthenticated"},
		{"a key as cookie", browser{e: e, cookie: e.alice}, "GET", "/v1/sandboxes", "", 401, "unauthenticated"},
		{"sign in without CSRF header", browser{e: e, noCSRF: true}, "POST", "/v1/console/session", `{"key":"` + e.alice + `"}`, 403, "forbidden"},
		{"sign in from another origin", browser{e: e, origin: "http://evil.example"}, "POST", "/v1/console/session", `{"key":"` + e.alice + `"}`, 403, "forbidden"},
		{"sign in with unknown key", browser{e: e}, "POST", "/v1/console/session", `{"key":"alk_nope"}`, 401, "unauthenticated"},
		{"sign in with garbage", browser{e: e}, "POST", "/v1/console/session", `{"key":"hunter2"}`, 401, "unauthenticated"},
		{"sign in with nothing", browser{e: e}, "POST", "/v1/console/session", `{"key":""}`, 400, "invalid_argument"},
		{"sign in with unknown field", browser{e: e}, "POST", "/v1/console/session", `{"key":"` + e.alice + `","remember":true}`, 400, "invalid_argument"},
		{"sign in with a sandbox token", browser{e: e}, "POST", "/v1/console/session", `{"key":"` + e.token(e.alice, aliceSB, 60) + `"}`, 400, "invalid_argument"},
		{"who am I without cookie", browser{e: e}, "GET", "/v1/console/session", "", 401, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.b.do(tc.method, tc.path, tc.body)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
			}
			if code, msg := a.errCode(); tc.code != "" && (code != tc.code || msg == "") {
				t.Fatalf("error %q %q, want code %q", code, msg, tc.code)
			}
		})
	}
	// The refused delete changed nothing.
	e.must(call{method: "GET", path: "/v1/sandboxes/" + aliceSB, cred: e.alice}, 200, nil)

	// Signing out ends the session server-side: the old cookie, replayed,
	// gets 401 everywhere; signing out again is fine.
	if a := alice.do("DELETE", "/v1/console/session", ""); a.status != 204 || !strings.Contains(a.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %v %s", a.status, a.header, a.body)
	}
	for _, p := range []string{"/v1/sandboxes", "/v1/sandboxes/" + aliceSB, "/v1/console/session"} {
		if a := alice.do("GET", p, ""); a.status != 401 {
			t.Fatalf("old cookie on %s: %d %s", p, a.status, a.body)
		}
	}
	if a := alice.do("DELETE", "/v1/console/session", ""); a.status != 204 {
		t.Fatalf("second sign out: %d %s", a.status, a.body)
	}

	// Deleting the key ends its sessions; a session expires.
	var nk struct{ ID, Key string }
	e.must(call{method: "POST", path: "/v1/keys", cred: e.admin, body: `{"tenant":"alice"}`}, 201, &nk)
	c2, _ := e.signIn(nk.Key)
	c3, _ := e.signIn(e.alice)
	if a := (browser{e: e, cookie: c2}).do("GET", "/v1/sandboxes", ""); a.status != 200 {
		t.Fatalf("new key's session: %d %s", a.status, a.body)
	}
	e.must(call{method: "DELETE", path: "/v1/keys/" + nk.ID, cred: e.admin}, 204, nil)
	if a := (browser{e: e, cookie: c2}).do("GET", "/v1/sandboxes", ""); a.status != 401 {
		t.Fatalf("deleted key's session: %d %s", a.status, a.body)
	}
	e.advance(consoleSessionTTL + time.Second)
	if a := (browser{e: e, cookie: c3}).do("GET", "/v1/sandboxes", ""); a.status != 401 {
		t.Fatalf("expired session: %d %s", a.status, a.body)
	}
	// A bearer credential still wins over a cookie, as before.
	e.must(call{method: "GET", path: "/v1/sandboxes", cred: e.bob}, 200, nil)
}
