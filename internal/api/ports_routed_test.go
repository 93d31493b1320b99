package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// dialingManager is the fake whose sandboxes' every port is one loopback
// server's, reached only by a caller the fake lets see the sandbox.
type dialingManager struct {
	*fakeManager
	addr string
}

func (m dialingManager) DialPort(ctx context.Context, c sandbox.Caller, id string, port int) (net.Conn, error) {
	m.mu.Lock()
	_, err := m.lookup(c, id)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", m.addr)
}

// routedEnv is an API whose sandboxes' ports answer with what they were
// sent, and a sandbox of alice's ("sb_1") and one of bob's ("sb_2").
type routedEnv struct {
	h              *Handler
	st             store.Store
	alice, bob     string // API keys
	token, otherTk string // sandbox tokens of sb_1 and sb_2
}

func newRoutedEnv(t *testing.T) *routedEnv {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"host": r.Host, "path": r.URL.Path, "raw": r.URL.RawPath, "query": r.URL.RawQuery, "header": r.Header})
	}))
	t.Cleanup(up.Close)
	st := teststore.Open(t)
	ctx := context.Background()
	fm := newFakeManager()
	e := &routedEnv{st: st, h: New(dialingManager{fm, up.Listener.Addr().String()}, st, Options{Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})}
	for i, name := range []string{"alice", "bob"} {
		tenant := "ten_" + name
		if err := st.CreateTenant(ctx, tenancy.Tenant{ID: tenant, Name: name, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		key, hash := NewKey()
		if err := st.CreateKey(ctx, tenancy.Key{ID: "key_" + name, TenantID: tenant, Name: name, Hash: hash, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		id := []string{"sb_1", "sb_2"}[i]
		rec := sandboxrec.Sandbox{ID: id, TenantID: tenant, State: sandboxrec.Running, Template: "base", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
			Metadata: map[string]string{"rule": name}}
		if err := st.CreateSandbox(ctx, rec); err != nil {
			t.Fatal(err)
		}
		fm.sandboxes[id] = rec
		tok, th := NewToken()
		if err := st.CreateToken(ctx, tenancy.Token{ID: "tok_" + name, SandboxID: id, TenantID: tenant, Hash: th, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if name == "alice" {
			e.alice, e.token = key, tok
		} else {
			e.bob, e.otherTk = key, tok
		}
	}
	// A sandbox that ended.
	if err := st.CreateSandbox(ctx, sandboxrec.Sandbox{ID: "sb_old", TenantID: "ten_alice", State: sandboxrec.Stopped, Template: "base", CreatedAt: t0, ExpiresAt: t0}); err != nil {
		t.Fatal(err)
	}
	return e
}

// refused is an Open refusal with a status.
type refused int

func (r refused) Error() string   { return "refused" }
func (r refused) PortStatus() int { return int(r) }

// TestServePortAccess pins who a routed port request reaches the port as:
// what Open lets through, else a credential of the sandbox, else nobody;
// unknown and ended sandboxes are 404 to everyone.
func TestServePortAccess(t *testing.T) {
	e := newRoutedEnv(t)
	open := func(r *http.Request, md map[string]string) error {
		switch md["rule"] {
		case "alice":
			if r.Header.Get("Pass") == "yes" {
				return nil
			}
			return refused(http.StatusForbidden)
		}
		return errors.New("closed")
	}
	for _, tc := range []struct {
		name, id, auth, pass string
		want                 int
	}{
		{name: "Open lets it through", id: "sb_1", pass: "yes", want: 200},
		{name: "Open refuses", id: "sb_1", want: 403},
		{name: "a plain refusal is 403", id: "sb_2", want: 403},
		{name: "the tenant's key", id: "sb_1", auth: "alice", want: 200},
		{name: "the sandbox's token", id: "sb_1", auth: "token", want: 200},
		{name: "another tenant's key", id: "sb_1", auth: "bob", want: 404},
		{name: "another sandbox's token", id: "sb_1", auth: "other", want: 404},
		{name: "a bad credential", id: "sb_1", auth: "alk_nope", want: 401},
		{name: "Open's pass wins over a bad credential", id: "sb_1", auth: "alk_nope", pass: "yes", want: 200},
		{name: "unknown sandbox", id: "sb_nope", pass: "yes", want: 404},
		{name: "unknown sandbox with a key", id: "sb_nope", auth: "alice", want: 404},
		{name: "ended sandbox", id: "sb_old", auth: "alice", want: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/whatever", nil)
			if tc.pass != "" {
				r.Header.Set("Pass", tc.pass)
			}
			cred := map[string]string{"alice": e.alice, "bob": e.bob, "token": e.token, "other": e.otherTk}[tc.auth]
			if cred == "" {
				cred = tc.auth
			}
			if cred != "" {
				r.Header.Set("Authorization", "Bearer "+cred)
			}
			w := httptest.NewRecorder()
			var failed int
			e.h.ServePort(w, r, PortRequest{Sandbox: tc.id, Port: 8000, Path: "/x", Open: open,
				Fail: func(w http.ResponseWriter, _ *http.Request, status int, msg string) {
					failed = status
					w.WriteHeader(status)
				}})
			if w.Code != tc.want {
				t.Fatalf("status %d (%s), want %d", w.Code, w.Body, tc.want)
			}
			if tc.want != 200 && failed != tc.want {
				t.Errorf("Fail was called with %d, want %d", failed, tc.want)
			}
		})
	}
}

// TestServePortForwards: the sandbox's server is asked for the routed
// path at localhost:PORT, and sees none of the caller's credentials: not
// Authorization, not the console's cookie, not the front's own headers.
func TestServePortForwards(t *testing.T) {
	e := newRoutedEnv(t)
	r := httptest.NewRequest("POST", "http://8000-sb_1.example.test/ignored?q=1", nil)
	r.Header.Set("Authorization", "Bearer "+e.alice)
	r.Header.Set("Cookie", SessionCookie+"=secret; app=kept")
	r.Header.Set("X-Front-Token", "secret")
	r.Header.Set("X-App", "kept")
	w := httptest.NewRecorder()
	e.h.ServePort(w, r, PortRequest{Sandbox: "sb_1", Port: 8000, Path: "/a/b", RawPath: "/a%2Fb", Drop: []string{"X-Front-Token"},
		Open: func(*http.Request, map[string]string) error { return errors.New("closed") },
		Fail: func(w http.ResponseWriter, _ *http.Request, status int, msg string) { http.Error(w, msg, status) }})
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var got struct {
		Host, Path, Raw, Query string
		Header                 http.Header
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Cookie": {"app=kept"}, "X-App": {"kept"}}
	for k := range got.Header {
		if k != "Cookie" && k != "X-App" {
			delete(got.Header, k) // what Go's client adds
		}
	}
	if d := cmp.Diff(want, got.Header); d != "" {
		t.Errorf("headers the sandbox saw (-want +got):\n%s", d)
	}
	if got.Host != "localhost:8000" || got.Path != "/a/b" || got.Raw != "/a%2Fb" || got.Query != "q=1" {
		t.Errorf("the sandbox was asked for host %q path %q (raw %q) query %q", got.Host, got.Path, got.Raw, got.Query)
	}
}
