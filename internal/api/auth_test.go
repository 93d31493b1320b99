package api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCredentials(t *testing.T) {
	k1, h1 := NewKey()
	k2, _ := NewKey()
	tok, th := NewToken()
	if !strings.HasPrefix(k1, "alk_") || !strings.HasPrefix(tok, "alt_") {
		t.Fatalf("prefixes: %q %q", k1, tok)
	}
	// 32 random bytes in unpadded base64url: 43 characters after the prefix.
	if len(k1) != 4+43 || len(tok) != 4+43 || strings.ContainsAny(k1[4:], "+/=") {
		t.Fatalf("encoding: %q %q", k1, tok)
	}
	if k1 == k2 {
		t.Fatal("two keys are equal")
	}
	if !bytes.Equal(h1, HashCredential(k1)) || !bytes.Equal(th, HashCredential(tok)) || len(h1) != 32 {
		t.Fatal("hash does not match HashCredential")
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	aliceSB := e.sandbox(e.alice)
	otherSB := e.sandbox(e.alice)
	bobSB := e.sandbox(e.bob)
	tok := e.token(e.alice, aliceSB, 60)

	// A key deleted by the admin stops working at once.
	var nk struct{ ID, Key string }
	e.must(call{method: "POST", path: "/v1/keys", cred: e.admin, body: `{"tenant":"alice"}`}, 201, &nk)
	e.must(call{method: "GET", path: "/v1/sandboxes", cred: nk.Key}, 200, nil)
	e.must(call{method: "DELETE", path: "/v1/keys/" + nk.ID, cred: e.admin}, 204, nil)

	expired := e.token(e.alice, otherSB, 10)

	sb := "/v1/sandboxes/" + aliceSB
	for _, tc := range []struct {
		name, method, path, cred, body string
		header                         string // raw Authorization header, instead of cred
		status                         int
		code                           string
	}{
		{name: "missing", method: "GET", path: "/v1/sandboxes", status: 401, code: "unauthenticated"},
		{name: "not bearer", method: "GET", path: "/v1/sandboxes", header: "Basic " + e.alice, status: 401, code: "unauthenticated"},
		{name: "empty bearer", method: "GET", path: "/v1/sandboxes", header: "Bearer ", status: 401, code: "unauthenticated"},
		{name: "unknown key", method: "GET", path: "/v1/sandboxes", cred: "alk_nope", status: 401, code: "unauthenticated"},
		{name: "no prefix", method: "GET", path: "/v1/sandboxes", cred: "hunter2", status: 401, code: "unauthenticated"},
		{name: "deleted key", method: "GET", path: "/v1/sandboxes", cred: nk.Key, status: 401, code: "unauthenticated"},
		{name: "unknown token", method: "GET", path: sb, cred: "alt_nope", status: 401, code: "unauthenticated"},
		{name: "expired token", method: "GET", path: "/v1/sandboxes/" + otherSB, cred: expired, status: 401, code: "unauthenticated"},
		{name: "bearer case", method: "GET", path: sb, header: "bearer " + e.alice, status: 200},

		{name: "token own sandbox", method: "GET", path: sb, cred: tok, status: 200},
		{name: "token exec", method: "POST", path: sb + "/exec", cred: tok, body: `{"cmd":["true"]}`, status: 200},
		{name: "token files", method: "GET", path: sb + "/files?path=.&list=1", cred: tok, status: 200},
		{name: "token other sandbox", method: "GET", path: "/v1/sandboxes/" + otherSB, cred: tok, status: 404, code: "not_found"},
		{name: "token other exec", method: "POST", path: "/v1/sandboxes/" + otherSB + "/exec", cred: tok, body: `{"cmd":["true"]}`, status: 404, code: "not_found"},
		{name: "token other tokens", method: "POST", path: "/v1/sandboxes/" + otherSB + "/tokens", cred: tok, body: `{"ttl_s":5}`, status: 404, code: "not_found"},
		{name: "token mints token", method: "POST", path: sb + "/tokens", cred: tok, body: `{"ttl_s":5}`, status: 403, code: "forbidden"},
		{name: "token lists", method: "GET", path: "/v1/sandboxes", cred: tok, status: 403, code: "forbidden"},
		{name: "token creates", method: "POST", path: "/v1/sandboxes", cred: tok, body: `{}`, status: 403, code: "forbidden"},
		{name: "token keys", method: "GET", path: "/v1/keys", cred: tok, status: 403, code: "forbidden"},
		{name: "templates", method: "GET", path: "/v1/templates", cred: e.alice, status: 200},
		{name: "token templates", method: "GET", path: "/v1/templates", cred: tok, status: 403, code: "forbidden"},
		{name: "token tenants", method: "GET", path: "/v1/tenants", cred: tok, status: 403, code: "forbidden"},

		{name: "other tenant", method: "GET", path: "/v1/sandboxes/" + bobSB, cred: e.alice, status: 404, code: "not_found"},
		{name: "other tenant delete", method: "DELETE", path: "/v1/sandboxes/" + bobSB, cred: e.alice, status: 404, code: "not_found"},
		{name: "other tenant token", method: "POST", path: "/v1/sandboxes/" + bobSB + "/tokens", cred: e.alice, body: `{"ttl_s":5}`, status: 404, code: "not_found"},
		{name: "non-admin tenants", method: "GET", path: "/v1/tenants", cred: e.alice, status: 403, code: "forbidden"},
		{name: "non-admin create tenant", method: "POST", path: "/v1/tenants", cred: e.alice, body: `{"name":"x"}`, status: 403, code: "forbidden"},
		{name: "non-admin tenant quota", method: "PATCH", path: "/v1/tenants/alice", cred: e.alice, body: `{"max_sandboxes":0}`, status: 403, code: "forbidden"},
		{name: "non-admin create key", method: "POST", path: "/v1/keys", cred: e.alice, body: `{"tenant":"alice"}`, status: 403, code: "forbidden"},
		{name: "non-admin delete key", method: "DELETE", path: "/v1/keys/key_bob", cred: e.alice, status: 403, code: "forbidden"},
		{name: "healthz needs nothing", method: "GET", path: "/healthz", status: 200},
		{name: "openapi needs nothing", method: "GET", path: "/v1/openapi.json", status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "expired token" {
				e.advance(10 * time.Second) // expiry is exclusive: now == expires_at is expired
				defer e.advance(-10 * time.Second)
			}
			c := call{method: tc.method, path: tc.path, cred: tc.cred, body: tc.body}
			a := e.doAuth(c, tc.header)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tc.status, a.body)
			}
			if tc.code == "" {
				return
			}
			if code, msg := a.errCode(); code != tc.code || msg == "" {
				t.Errorf("error %q %q, want code %q and a message", code, msg, tc.code)
			}
			if got := a.header.Get("WWW-Authenticate"); (tc.status == 401) != (got != "") {
				t.Errorf("WWW-Authenticate %q on a %d", got, tc.status)
			}
		})
	}
}

// doAuth is do with a raw Authorization header when header is set.
func (e *env) doAuth(c call, header string) answer {
	if header == "" {
		return e.do(c)
	}
	e.authHeader = header
	defer func() { e.authHeader = "" }()
	return e.do(c)
}

// TestAnswerWaitsForDurable: no byte of an answer leaves before the audit
// log is durable (Manager.Durable returned), so a client never hears of
// an event a kill -9 of the daemon could still lose.
func TestAnswerWaitsForDurable(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	release := make(chan struct{})
	e.m.mu.Lock()
	e.m.durable = func() { <-release }
	e.m.mu.Unlock()
	answered := make(chan answer, 1)
	go func() {
		answered <- e.do(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["true"]}`})
	}()
	select {
	case a := <-answered:
		t.Fatalf("answered %d before the audit log was durable", a.status)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if a := <-answered; a.status != http.StatusOK {
		t.Fatalf("exec: %d %s", a.status, a.body)
	}
}
