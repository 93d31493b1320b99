package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// env is a running API over a fake manager and store, with three tenants:
// root (admin key), alice and bob.
type env struct {
	t            *testing.T
	m            *fakeManager
	st           store.Store
	srv          *httptest.Server
	mu           sync.Mutex
	now          time.Time
	admin, alice string
	bob          string
	authHeader   string // raw Authorization header for the next request
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, Options{})
}

// newEnvWith is newEnv with opts' non-zero KeepAlive, DataDir and Nodes.
func newEnvWith(t *testing.T, opts Options) *env {
	t.Helper()
	st := teststore.Open(t)
	e := &env{t: t, m: newFakeManager(), st: st, now: t0}
	// AgentProtocol as serve sets it: GET /v1/server never answers 0.
	h := New(e.m, e.st, Options{MaxJSONBody: 4096, Now: e.clock, Logger: slog.New(slog.DiscardHandler), KeepAlive: opts.KeepAlive, DataDir: opts.DataDir, Nodes: opts.Nodes,
		AgentProtocol: agent.ProtocolVersion})
	e.srv = newServer(t, h)
	e.admin = e.addTenant("root", true)
	e.alice = e.addTenant("alice", false)
	e.bob = e.addTenant("bob", false)
	return e
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

func (e *env) addTenant(name string, admin bool) string {
	ctx := context.Background()
	if err := e.st.CreateTenant(ctx, tenancy.Tenant{ID: "ten_" + name, Name: name, CreatedAt: t0}); err != nil {
		e.t.Fatal(err)
	}
	key, hash := NewKey()
	k := tenancy.Key{ID: "key_" + name, TenantID: "ten_" + name, Name: name + "-key", Hash: hash, Admin: admin, CreatedAt: t0}
	if err := e.st.CreateKey(ctx, k); err != nil {
		e.t.Fatal(err)
	}
	return key
}

// call is one request. A body is sent as application/json unless ctype
// says otherwise ("-" sends no Content-Type).
type call struct {
	method, path, cred, body, ctype, accept string
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// errCode returns the code and message of a JSON error answer.
func (a answer) errCode() (string, string) {
	var eb errorBody
	if err := json.Unmarshal(a.body, &eb); err != nil {
		return "", "not a JSON error: " + string(a.body)
	}
	return eb.Error.Code, eb.Error.Message
}

func (e *env) do(c call) answer {
	e.t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, e.srv.URL+c.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if c.cred != "" {
		req.Header.Set("Authorization", "Bearer "+c.cred)
	}
	if e.authHeader != "" {
		req.Header.Set("Authorization", e.authHeader)
	}
	switch {
	case c.ctype == "-":
	case c.ctype != "":
		req.Header.Set("Content-Type", c.ctype)
	case c.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// must does c and fails the test unless the status is want; it decodes a
// JSON answer into out when out is not nil.
func (e *env) must(c call, want int, out any) answer {
	e.t.Helper()
	a := e.do(c)
	if a.status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", c.method, c.path, a.status, want, a.body)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", c.method, c.path, a.body, err)
		}
	}
	return a
}

// sandbox creates a sandbox for cred and returns its id.
func (e *env) sandbox(cred string) string {
	e.t.Helper()
	var sb sandboxJSON
	e.must(call{method: "POST", path: "/v1/sandboxes", cred: cred, body: `{}`}, 201, &sb)
	return sb.ID
}

// token mints a token of sandbox id with alice's key.
func (e *env) token(cred, id string, ttl int) string {
	e.t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/tokens", cred: cred, body: `{"ttl_s":` + itoa(ttl) + `}`}, 201, &tok)
	return tok.Token
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
