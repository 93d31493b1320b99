package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// fakeElector leads when leads is set and names leader.
type fakeElector struct {
	leads  atomic.Bool
	leader atomic.Value
}

func (f *fakeElector) Run(ctx context.Context) { <-ctx.Done() }
func (f *fakeElector) IsLeader() bool          { return f.leads.Load() }
func (f *fakeElector) Leader() string          { s, _ := f.leader.Load().(string); return s }

// TestReplicaForwards: a follower forwards calls to the leader whose
// signed identity checks, marking them; it refuses (503, nothing sent)
// a leader identity not signed with the control plane's key, and a call
// another replica forwarded already.
func TestReplicaForwards(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	var got atomic.Value
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Method + " " + r.URL.RequestURI() + " by " + r.Header.Get(forwardedHeader) + " auth " + r.Header.Get("Authorization"))
		io.WriteString(w, "from the leader")
	}))
	defer leader.Close()
	el := &fakeElector{}
	rp := &replica{self: "http://127.0.0.1:1", el: el, pub: pub}
	call := func(path string, hdr map[string]string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		rp.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}

	if code, body := call("/readyz", nil); code != 503 || !strings.Contains(body, "unavailable") {
		t.Errorf("readyz with no leader: %d %s", code, body)
	}
	if code, _ := call("/v1/sandboxes", nil); code != 503 {
		t.Errorf("a call with no leader: %d, want 503", code)
	}

	el.leader.Store(signIdentity(otherKey, leader.URL))
	if code, _ := call("/v1/sandboxes", map[string]string{"Authorization": "Bearer alk_secret"}); code != 503 || got.Load() != nil {
		t.Errorf("a leader signed with another key: %d, forwarded %v", code, got.Load())
	}
	el.leader.Store(leader.URL)
	if code, _ := call("/v1/sandboxes", nil); code != 503 || got.Load() != nil {
		t.Errorf("an unsigned leader: %d, forwarded %v", code, got.Load())
	}

	el.leader.Store(signIdentity(key, leader.URL))
	code, body := call("/v1/sandboxes?state=running", map[string]string{"Authorization": "Bearer alk_secret"})
	if code != 200 || body != "from the leader" || got.Load() != "GET /v1/sandboxes?state=running by http://127.0.0.1:1 auth Bearer alk_secret" {
		t.Errorf("forwarded: %d %q, leader saw %v", code, body, got.Load())
	}
	if code, body := call("/readyz", nil); code != 200 || !strings.Contains(body, leader.URL) {
		t.Errorf("readyz with a leader: %d %s", code, body)
	}
	got = atomic.Value{}
	if code, _ := call("/v1/sandboxes", map[string]string{forwardedHeader: "http://127.0.0.1:2"}); code != 503 || got.Load() != nil {
		t.Errorf("a call forwarded twice: %d, forwarded %v", code, got.Load())
	}
}

// TestReplicaForwardsSandboxHosts: with --e2b-domain, a follower forwards
// a sandbox's host name whatever its path: the sandbox's /healthz and
// /readyz are the sandbox's, not the replica's.
func TestReplicaForwardsSandboxHosts(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "from the leader for "+r.Host)
	}))
	defer leader.Close()
	el := &fakeElector{}
	el.leader.Store(signIdentity(key, leader.URL))
	rp := &replica{self: "http://127.0.0.1:1", el: el, pub: pub, e2bDomain: "e2b.test"}
	for host, want := range map[string]string{
		"8000-sb-1.e2b.test": "from the leader for 8000-sb-1.e2b.test",
		"127.0.0.1:7070":     `"status":"ok"`,
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		w := httptest.NewRecorder()
		rp.ServeHTTP(w, req)
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET /healthz at %s: %d %s, want %s", host, w.Code, w.Body, want)
		}
	}
}

// TestReplicaMetrics: every replica answers /metrics itself, to admin
// keys only, and never forwards it: a follower its own process's series
// and airlock_replica_leader 0, the leader the daemon's series as well,
// each once, and airlock_replica_leader 1. A Prometheus scraping every
// pod thus gets the daemon-wide series once.
func TestReplicaMetrics(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	var forwarded atomic.Bool
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Store(true)
		io.WriteString(w, "from the leader")
	}))
	defer leader.Close()
	el := &fakeElector{}
	el.leader.Store(signIdentity(key, leader.URL))
	rp := &replica{self: "http://127.0.0.1:1", el: el, pub: pub, metrics: metrics.NewReplica(func() bool { return el.IsLeader() }, nil),
		auth: func(_ context.Context, cred string) (tenancy.Principal, error) {
			switch cred {
			case "alk_admin":
				return tenancy.Principal{TenantID: "t", KeyID: "k1", Admin: true}, nil
			case "alk_user":
				return tenancy.Principal{TenantID: "t", KeyID: "k2"}, nil
			}
			return tenancy.Principal{}, tenancy.ErrBadCredential
		}}
	scrape := func(cred string) (int, string) {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		w := httptest.NewRecorder()
		rp.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for cred, want := range map[string]int{"": 401, "alk_nobody": 401, "alk_user": 403} {
		if code, body := scrape(cred); code != want {
			t.Errorf("/metrics with %q: %d %s, want %d", cred, code, body, want)
		}
	}
	// lines returns the sample lines of the series named name.
	lines := func(body, name string) []string {
		var out []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
				out = append(out, l)
			}
		}
		return out
	}

	code, body := scrape("alk_admin")
	if code != 200 || forwarded.Load() {
		t.Fatalf("a follower's /metrics: %d, forwarded %v:\n%s", code, forwarded.Load(), body)
	}
	if got := lines(body, "airlock_replica_leader"); !slices.Equal(got, []string{"airlock_replica_leader 0"}) {
		t.Errorf("a follower's leader gauge: %q", got)
	}
	if len(lines(body, "go_goroutines")) != 1 || len(lines(body, "airlock_sandbox_creates_total")) != 0 {
		t.Errorf("a follower serves its process's series alone; got:\n%s", body)
	}

	d := metrics.New(nil)
	d.CreateDone(time.Millisecond, nil)
	el.leads.Store(true)
	rp.term = &leaderTerm{handler: http.NotFoundHandler(), metrics: d, end: func() {}}
	code, body = scrape("alk_admin")
	if code != 200 || forwarded.Load() {
		t.Fatalf("the leader's /metrics: %d, forwarded %v:\n%s", code, forwarded.Load(), body)
	}
	for name, want := range map[string][]string{
		"airlock_replica_leader":        {"airlock_replica_leader 1"},
		"airlock_sandbox_creates_total": {"airlock_sandbox_creates_total 1"},
	} {
		if got := lines(body, name); !slices.Equal(got, want) {
			t.Errorf("the leader's %s: %q, want %q", name, got, want)
		}
	}
	if n := len(lines(body, "go_goroutines")); n != 1 {
		t.Errorf("the leader serves go_goroutines %d times, want once:\n%s", n, body)
	}
}
