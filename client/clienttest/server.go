// Package clienttest is an in-memory fake of the Airlock API (docs/API.md)
// for tests of programs that use package client. It runs nothing: exec
// calls a function the test supplies, and files live in memory; pausing
// changes a sandbox's state (and refuses exec and files while paused,
// as the server does), a deleted sandbox stays, stopped, as on the
// server, a snapshot or a fork copies its files, a volume's
// files are shared by the sandboxes that mount it (one read-write mount
// at a time), and an image import makes a template of an image the test
// added (AddImage). It checks
// credentials and refuses unknown JSON fields like the real server, but it
// must not grow into a second server: it enforces no quotas and no tenancy
// beyond a sandbox token's one sandbox.
package clienttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// Server is a running fake.
type Server struct {
	URL      string
	AdminKey string // a credential the fake accepts, with admin rights

	mu        sync.Mutex
	exec      ExecFunc
	seq       int
	order     []string // sandbox ids in creation order, for pages
	sandboxes map[string]*sandbox
	tenants   []client.Tenant
	keys      map[string]*key   // by secret
	tokens    map[string]string // secret -> sandbox id
	snapshots map[string]*snapshot
	volumes   map[string]*volume
	images    map[string]*image
	templates map[string]client.Template // imported
}

type sandbox struct {
	client.Sandbox
	files  map[string]file // by clean absolute path
	dirs   map[string]fileMode
	mounts []mount
	// lifeLeft is what was left of its lifetime when it was paused.
	lifeLeft time.Duration
}

type key struct {
	client.Key
	admin bool
}

// NewServer starts a fake that the test's cleanup stops.
func NewServer(t testing.TB) *Server { return NewServerWith(t, nil) }

// NewServerWith is NewServer with the fake's handler wrapped by wrap
// unless it is nil: a test may check every answer against the API's
// document (client/clienttest/contract).
func NewServerWith(t testing.TB, wrap func(http.Handler) http.Handler) *Server {
	s := &Server{
		AdminKey:  "alk_admin",
		exec:      echo,
		sandboxes: map[string]*sandbox{},
		keys:      map[string]*key{"alk_admin": {Key: client.Key{ID: "key-admin", Tenant: "admin", Name: "admin"}, admin: true}},
		tokens:    map[string]string{},
		snapshots: map[string]*snapshot{},
		volumes:   map[string]*volume{},
		images:    map[string]*image{},
		templates: map[string]client.Template{},
	}
	h := s.routes()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// ExecFunc stands for a command run in a sandbox: it writes the output
// and returns how the command ended (signal: the one that killed it, or 0).
// A shell string arrives as sh -c STRING.
type ExecFunc func(argv []string, stdout, stderr io.Writer) (exitCode, signal int)

// SetExec makes f answer the execs that follow. The default writes argv
// joined by spaces and a newline to stdout and exits 0.
func (s *Server) SetExec(f ExecFunc) {
	s.mu.Lock()
	s.exec = f
	s.mu.Unlock()
}

func echo(argv []string, stdout, _ io.Writer) (int, int) {
	fmt.Fprintln(stdout, strings.Join(argv, " "))
	return 0, 0
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"status": "ok"})
	})
	sb := func(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
		return s.auth(false, s.withSandbox(h))
	}
	// What needs the sandbox not ended, and what needs it running.
	live := func(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
		return sb(s.alive(h))
	}
	run := func(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
		return live(s.awake(h))
	}
	mux.HandleFunc("POST /v1/sandboxes", s.auth(false, s.create))
	mux.HandleFunc("GET /v1/sandboxes", s.auth(false, s.list))
	mux.HandleFunc("GET /v1/sandboxes/{id}", sb(func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		s.mu.Lock()
		sb := b.Sandbox
		s.mu.Unlock()
		writeJSON(w, 200, wire(sb))
	}))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", sb(s.delete))
	mux.HandleFunc("POST /v1/sandboxes/{id}/timeout", live(s.setTimeout))
	mux.HandleFunc("POST /v1/sandboxes/{id}/tokens", sb(s.token))
	mux.HandleFunc("POST /v1/sandboxes/{id}/pause", live(s.pause))
	mux.HandleFunc("POST /v1/sandboxes/{id}/resume", live(s.resume))
	mux.HandleFunc("POST /v1/sandboxes/{id}/snapshots", live(s.createSnapshot))
	mux.HandleFunc("POST /v1/sandboxes/{id}/fork", live(s.fork))
	mux.HandleFunc("GET /v1/snapshots", s.auth(false, s.listSnapshots))
	mux.HandleFunc("GET /v1/snapshots/{name}", s.auth(false, s.getSnapshot))
	mux.HandleFunc("DELETE /v1/snapshots/{name}", s.auth(false, s.deleteSnapshot))
	mux.HandleFunc("POST /v1/volumes", s.auth(false, s.createVolume))
	mux.HandleFunc("GET /v1/volumes", s.auth(false, s.listVolumes))
	mux.HandleFunc("GET /v1/volumes/{name}", s.auth(false, s.getVolume))
	mux.HandleFunc("DELETE /v1/volumes/{name}", s.auth(false, s.deleteVolume))
	mux.HandleFunc("GET /v1/templates", s.auth(false, s.listTemplates))
	mux.HandleFunc("GET /v1/templates/{name}", s.auth(false, s.getTemplate))
	mux.HandleFunc("POST /v1/templates", s.auth(true, s.importImage))
	mux.HandleFunc("GET /v1/server", s.auth(true, func(w http.ResponseWriter, r *http.Request) {
		// The fake runs no agents; it speaks of protocol 1 as a server
		// always names one.
		writeJSON(w, 200, client.ServerInfo{Version: "clienttest", AgentProtocol: 1, SandboxAgents: map[string]int{}})
	}))
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", run(s.execute))
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files", run(s.writeFile))
	mux.HandleFunc("GET /v1/sandboxes/{id}/files", run(s.readFile))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}/files", run(s.remove))
	mux.HandleFunc("POST /v1/sandboxes/{id}/files/mkdir", run(s.mkdir))
	mux.HandleFunc("POST /v1/sandboxes/{id}/files/move", run(s.move))
	mux.HandleFunc("POST /v1/tenants", s.auth(true, s.createTenant))
	mux.HandleFunc("GET /v1/tenants", s.auth(true, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"tenants": s.tenants})
	}))
	mux.HandleFunc("PATCH /v1/tenants/{name}", s.auth(true, s.updateTenant))
	mux.HandleFunc("POST /v1/keys", s.auth(true, s.createKey))
	mux.HandleFunc("GET /v1/keys", s.auth(false, s.listKeys))
	mux.HandleFunc("DELETE /v1/keys/{id}", s.auth(true, s.deleteKey))
	return mux
}

// auth lets a request through with a known credential; admin routes want
// the admin key, and a sandbox token reaches only sandbox routes.
func (s *Server) auth(admin bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		k, isKey := s.keys[cred]
		_, isToken := s.tokens[cred]
		s.mu.Unlock()
		switch {
		case !ok || !isKey && !isToken:
			fail(w, 401, "unauthenticated", "missing or unknown credential")
		case admin && (!isKey || !k.admin):
			fail(w, 403, "forbidden", "this route needs the admin key")
		case isToken && r.PathValue("id") == "":
			fail(w, 404, "not_found", "no such route for a sandbox token")
		default:
			h(w, r)
		}
	}
}

// withSandbox looks up {id}; for a sandbox token any other sandbox does
// not exist.
func (s *Server) withSandbox(h func(http.ResponseWriter, *http.Request, *sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		b := s.sandboxes[id]
		only, isToken := s.tokens[cred]
		s.mu.Unlock()
		if b == nil || isToken && only != id {
			fail(w, 404, "not_found", fmt.Sprintf("sandbox %s not found", id))
			return
		}
		h(w, r, b)
	}
}

// createRequest is the body of POST /v1/sandboxes, as far as the fake
// takes it.
type createRequest struct {
	Template string                `json:"template"`
	CPUs     float64               `json:"cpus"`
	MemoryMB int64                 `json:"memory_mb"`
	Pids     int64                 `json:"pids"`
	DiskMB   int64                 `json:"disk_mb"`
	TimeoutS int64                 `json:"timeout_s"`
	Env      map[string]string     `json:"env"`
	Metadata map[string]string     `json:"metadata"`
	Workdir  string                `json:"workdir"`
	Network  *client.NetworkPolicy `json:"network"`
	// Secrets: the fake keeps none, so naming one is refused.
	Secrets      []string             `json:"secrets"`
	IdleTimeoutS int64                `json:"idle_timeout_s"`
	Build        bool                 `json:"build"`
	AutoResume   bool                 `json:"auto_resume"`
	IdleAction   string               `json:"idle_action"`
	MaxPausedS   int64                `json:"max_paused_s"`
	Snapshot     string               `json:"snapshot"`
	Volumes      []client.VolumeMount `json:"volumes"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decode(w, r, &req) {
		return
	}
	var files map[string]file
	var dirs map[string]fileMode
	if req.Snapshot != "" {
		s.mu.Lock()
		snap := s.snapshots[req.Snapshot]
		if snap != nil {
			files, dirs = cloneFiles(snap.files, snap.dirs)
		}
		s.mu.Unlock()
		if snap == nil {
			fail(w, 404, "not_found", fmt.Sprintf("snapshot %s", req.Snapshot))
			return
		}
		if req.Template != "" && req.Template != snap.Template {
			fail(w, 400, "invalid_argument", fmt.Sprintf("snapshot %s was taken on template %s, not %s", snap.Name, snap.Template, req.Template))
			return
		}
		req.Template = snap.Template
	}
	sb, ok := s.newSandbox(w, req, files, dirs)
	if ok {
		writeJSON(w, 201, wire(sb))
	}
}

// newSandbox makes a sandbox of req with the given files, or answers why
// not.
func (s *Server) newSandbox(w http.ResponseWriter, req createRequest, files map[string]file, dirs map[string]fileMode) (client.Sandbox, bool) {
	if req.TimeoutS < 0 || req.TimeoutS > 86400 || req.CPUs < 0 || req.MemoryMB < 0 {
		fail(w, 400, "invalid_argument", "timeout_s must be between 0 and 86400, limits not negative")
		return client.Sandbox{}, false
	}
	if req.IdleTimeoutS < 0 || req.Network != nil && req.Network.Mode != client.NetworkNone && req.Network.Mode != client.NetworkAllowlist {
		fail(w, 400, "invalid_argument", "idle_timeout_s must not be negative, network mode none or allowlist")
		return client.Sandbox{}, false
	}
	if len(req.Secrets) > 0 {
		fail(w, 400, "invalid_argument", fmt.Sprintf("secrets[0]: no secret named %q (create it with POST /v1/secrets)", req.Secrets[0]))
		return client.Sandbox{}, false
	}
	if req.IdleAction != "" && req.IdleAction != "destroy" && req.IdleAction != "pause" {
		fail(w, 400, "invalid_argument", "idle_action must be destroy or pause")
		return client.Sandbox{}, false
	}
	s.mu.Lock()
	_, ok := s.templateLocked(or(req.Template, "base"))
	s.mu.Unlock()
	if !ok {
		fail(w, 404, "not_found", fmt.Sprintf("template %q", req.Template))
		return client.Sandbox{}, false
	}
	if files == nil {
		files, dirs = map[string]file{}, map[string]fileMode{}
	}
	now := time.Now().UTC().Truncate(time.Second)
	sb := client.Sandbox{
		State:        client.StateRunning,
		Template:     or(req.Template, "base"),
		CreatedAt:    now,
		ExpiresAt:    now.Add(time.Duration(or(req.TimeoutS, 300)) * time.Second),
		Limits:       client.Limits{CPUs: or(req.CPUs, 1), MemoryMB: or(req.MemoryMB, 512), Pids: or(req.Pids, 256), DiskMB: or(req.DiskMB, 1024)},
		Metadata:     req.Metadata,
		Workdir:      req.Workdir, // as the server: "" for the default, /home/user
		Network:      req.Network,
		IdleTimeoutS: req.IdleTimeoutS,
		Node:         "local",
		AutoResume:   req.AutoResume,
		IdleAction:   or(req.IdleAction, "destroy"),
		MaxPausedS:   or(req.MaxPausedS, int64(maxPaused/time.Second)),
		Snapshot:     req.Snapshot,
		Volumes:      req.Volumes,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	sb.ID = fmt.Sprintf("sb-%04d", s.seq)
	mounts, status, msg := s.mountLocked(sb.ID, req.Volumes)
	if status != 0 {
		fail(w, status, map[int]string{400: "invalid_argument", 404: "not_found", 409: "conflict"}[status], msg)
		return client.Sandbox{}, false
	}
	s.sandboxes[sb.ID] = &sandbox{Sandbox: sb, files: files, dirs: dirs, mounts: mounts}
	s.order = append(s.order, sb.ID)
	return sb, true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	page := client.Page{Sandboxes: []client.Sandbox{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := 0
	if a := q.Get("after"); a != "" {
		start = slices.Index(s.order, a) + 1
	}
outer:
	for _, id := range s.order[start:] {
		sb := s.sandboxes[id].Sandbox
		if st := q.Get("state"); st != "" && sb.State != st {
			continue
		}
		for k, v := range q {
			if m, ok := strings.CutPrefix(k, "metadata."); ok && sb.Metadata[m] != v[0] {
				continue outer
			}
		}
		if len(page.Sandboxes) == limit {
			page.Next = page.Sandboxes[limit-1].ID
			break
		}
		page.Sandboxes = append(page.Sandboxes, sb)
	}
	writeJSON(w, 200, map[string]any{"sandboxes": wireAll(page.Sandboxes), "next": page.Next})
}

// delete stops the sandbox as the server does: it is kept, stopped, for
// GET and lists to show how it ended; deleting it again changes nothing.
func (s *Server) delete(w http.ResponseWriter, r *http.Request, b *sandbox) {
	s.mu.Lock()
	if b.State != client.StateStopped {
		s.unmountLocked(b)
		b.State, b.PausedAt, b.EndedAt = client.StateStopped, time.Time{}, time.Now().UTC()
		b.files, b.dirs = map[string]file{}, map[string]fileMode{}
	}
	s.mu.Unlock()
	w.WriteHeader(204)
}

// alive lets a call through on a sandbox that has not ended; one on a
// stopped sandbox is a conflict, as on the server.
func (s *Server) alive(h func(http.ResponseWriter, *http.Request, *sandbox)) func(http.ResponseWriter, *http.Request, *sandbox) {
	return func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		s.mu.Lock()
		stopped := b.State == client.StateStopped
		s.mu.Unlock()
		if stopped {
			fail(w, 409, "conflict", fmt.Sprintf("sandbox %s is stopped", b.ID))
			return
		}
		h(w, r, b)
	}
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		TimeoutS int64 `json:"timeout_s"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.TimeoutS <= 0 || req.TimeoutS > 86400 {
		fail(w, 400, "invalid_argument", "timeout_s must be between 1 and 86400")
		return
	}
	s.mu.Lock()
	if b.State == client.StatePaused {
		s.mu.Unlock()
		fail(w, 409, "paused", fmt.Sprintf("sandbox %s is paused: resume it first", b.ID))
		return
	}
	b.ExpiresAt = time.Now().UTC().Truncate(time.Second).Add(time.Duration(req.TimeoutS) * time.Second)
	sb := b.Sandbox
	s.mu.Unlock()
	writeJSON(w, 200, wire(sb))
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		TTLS int64 `json:"ttl_s"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	s.seq++
	t := client.Token{Token: fmt.Sprintf("alt_%d", s.seq), ExpiresAt: time.Now().UTC().Add(time.Duration(req.TTLS) * time.Second)}
	s.tokens[t.Token] = b.ID
	s.mu.Unlock()
	writeJSON(w, 201, t)
}

// decode reads a JSON body as the real server does: unknown fields are
// refused.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		fail(w, 400, "invalid_argument", "bad JSON body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
