package api

import (
	"crypto/ed25519"
	_ "embed"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/events"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Options tunes the API. Zero fields take defaults.
type Options struct {
	// MaxJSONBody bounds a JSON request body (default 1 MiB). File uploads
	// are streamed and bounded by the sandbox's disk limit instead.
	MaxJSONBody int64
	// Now is the clock for token expiry (default time.Now).
	Now func() time.Time
	// Logger receives internal errors (default slog.Default()).
	Logger *slog.Logger
	// AuditSigner signs audit exports; nil exports them unsigned.
	AuditSigner ed25519.PrivateKey
	// TraceContext makes the spans of a request children of the W3C trace
	// context (traceparent) it carries; set when tracing is on.
	TraceContext bool
	// KeepAlive is how often a quiet exec stream gets an SSE comment
	// (default 15 s).
	KeepAlive time.Duration
	// Metrics is served at GET /metrics to admin keys; nil answers 404.
	Metrics *metrics.Metrics
	// Events serves GET /v1/events and the webhook routes; nil answers
	// 503.
	Events *events.Hub
	// Tasks serves the /v1/tasks routes; nil answers 503.
	Tasks *tasks.Service
	// DataDir is the server's data dir, which GET /v1/server tells admins
	// (airlock doctor checks the dir the server runs on).
	DataDir string
	// AgentProtocol is the agent protocol version this binary's sandboxes
	// speak, reported by GET /v1/server.
	AgentProtocol int
	// Nodes serves the /v1/nodes routes; nil answers 503.
	Nodes Nodes
	// Approvals serves the /v1/approvals routes; nil answers 503.
	Approvals *approvals.Service
}

type server struct {
	signer  ed25519.PrivateKey // audit exports; nil: unsigned
	m       Manager
	tenancy *tenancy.Service // who calls; tenants, keys, tokens, console sessions
	maxJSON int64
	now     func() time.Time
	log     *slog.Logger
	// keepAlive: see Options.KeepAlive.
	keepAlive time.Duration
	// metricsHandler serves GET /metrics; nil without metrics.
	metricsHandler http.Handler
	// events: see Options.Events.
	events *events.Hub
	// tasks: see Options.Tasks.
	tasks *tasks.Service
	// dataDir: see Options.DataDir.
	dataDir       string
	agentProtocol int
	nodes         Nodes
	approvals     *approvals.Service
	// records: see sandboxRecords (ports_routed.go).
	records sandboxRecords
}

// route is one entry of the API. The same table registers the handlers and
// is compared with openapi.json by a test, so the two cannot drift apart.
type route struct {
	method, path string
	access       access
	handler      func(*server, http.ResponseWriter, *http.Request)
}

var routes = []route{
	{"GET", "/healthz", public, (*server).healthz},
	{"GET", "/readyz", public, (*server).readyz},
	{"GET", "/v1/openapi.json", public, (*server).openAPI},

	{"POST", "/v1/sandboxes", anyKey, (*server).createSandbox},
	{"GET", "/v1/sandboxes", anyKey, (*server).listSandboxes},
	{"GET", "/v1/sandboxes/{id}", sandboxRoute, (*server).getSandbox},
	{"DELETE", "/v1/sandboxes/{id}", sandboxRoute, (*server).deleteSandbox},
	{"POST", "/v1/sandboxes/{id}/timeout", sandboxRoute, (*server).setTimeout},
	{"POST", "/v1/sandboxes/{id}/pause", sandboxRoute, (*server).pauseSandbox},
	{"POST", "/v1/sandboxes/{id}/resume", sandboxRoute, (*server).resumeSandbox},
	{"POST", "/v1/sandboxes/{id}/snapshots", sandboxKeyOnly, (*server).createSnapshot},
	{"POST", "/v1/sandboxes/{id}/fork", sandboxKeyOnly, (*server).forkSandbox},
	{"GET", "/v1/snapshots", anyKey, (*server).listSnapshots},
	{"GET", "/v1/snapshots/{name}", anyKey, (*server).getSnapshot},
	{"DELETE", "/v1/snapshots/{name}", anyKey, (*server).deleteSnapshot},
	{"POST", "/v1/volumes", anyKey, (*server).createVolume},
	{"GET", "/v1/volumes", anyKey, (*server).listVolumes},
	{"GET", "/v1/volumes/{name}", anyKey, (*server).getVolume},
	{"DELETE", "/v1/volumes/{name}", anyKey, (*server).deleteVolume},
	{"GET", "/v1/sandboxes/{id}/metrics", sandboxRoute, (*server).sandboxMetrics},
	{"GET", "/v1/sandboxes/{id}/metrics/history", sandboxRoute, (*server).sandboxMetricsHistory},
	{"GET", "/v1/sandboxes/metrics", anyKey, (*server).sandboxesMetrics},
	// Ports (ports.go): HTTP to a port the sandbox listens on.
	{"GET", "/v1/sandboxes/{id}/ports/{port}/", sandboxRoute, (*server).portProxy},
	{"POST", "/v1/sandboxes/{id}/ports/{port}/", sandboxRoute, (*server).portProxy},
	{"PUT", "/v1/sandboxes/{id}/ports/{port}/", sandboxRoute, (*server).portProxy},
	{"PATCH", "/v1/sandboxes/{id}/ports/{port}/", sandboxRoute, (*server).portProxy},
	{"DELETE", "/v1/sandboxes/{id}/ports/{port}/", sandboxRoute, (*server).portProxy},
	{"POST", "/v1/sandboxes/{id}/exec", sandboxRoute, (*server).exec},
	{"PUT", "/v1/sandboxes/{id}/files", sandboxRoute, (*server).writeFile},
	{"GET", "/v1/sandboxes/{id}/files", sandboxRoute, (*server).readFile},
	{"DELETE", "/v1/sandboxes/{id}/files", sandboxRoute, (*server).removeFile},
	{"POST", "/v1/sandboxes/{id}/files/mkdir", sandboxRoute, (*server).mkdir},
	{"POST", "/v1/sandboxes/{id}/files/move", sandboxRoute, (*server).move},
	{"POST", "/v1/sandboxes/{id}/tokens", sandboxKeyOnly, (*server).createToken},
	{"POST", "/v1/sandboxes/{id}/sessions", sandboxRoute, (*server).createSession},
	{"GET", "/v1/sandboxes/{id}/sessions", sandboxRoute, (*server).listSessions},
	{"POST", "/v1/sandboxes/{id}/sessions/{sid}/exec", sandboxRoute, (*server).sessionExec},
	{"DELETE", "/v1/sandboxes/{id}/sessions/{sid}", sandboxRoute, (*server).deleteSession},
	{"GET", "/v1/sandboxes/{id}/sessions/{sid}/attach", sandboxRoute, (*server).attachSession},
	{"GET", "/v1/sandboxes/{id}/processes", sandboxRoute, (*server).listProcesses},
	{"GET", "/v1/sandboxes/{id}/processes/{pid}/output", sandboxRoute, (*server).processOutput},
	{"GET", "/v1/sandboxes/{id}/execs/{exec_id}", sandboxRoute, (*server).getExec},
	{"GET", "/v1/sandboxes/{id}/execs/{exec_id}/output", sandboxRoute, (*server).execOutput},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", sandboxRoute, (*server).writeStdin},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/stdin/close", sandboxRoute, (*server).closeStdin},
	{"POST", "/v1/sandboxes/{id}/processes/{pid}/signal", sandboxRoute, (*server).signalProcess},
	{"GET", "/v1/sandboxes/{id}/network", sandboxRoute, (*server).getNetwork},
	{"PUT", "/v1/sandboxes/{id}/network", sandboxKeyOnly, (*server).setNetwork},
	{"GET", "/v1/sandboxes/{id}/network/log", sandboxRoute, (*server).networkLog},
	{"GET", "/v1/sandboxes/{id}/audit", sandboxKeyOnly, (*server).auditLog},
	{"GET", "/v1/sandboxes/{id}/audit/verify", sandboxKeyOnly, (*server).verifyAudit},
	{"GET", "/v1/sandboxes/{id}/audit/export", sandboxKeyOnly, (*server).exportAudit},
	{"GET", "/v1/sandboxes/{id}/audit/cast", sandboxKeyOnly, (*server).auditCast},
	{"GET", "/v1/sandboxes/{id}/sessions/{sid}/cast", sandboxKeyOnly, (*server).sessionCast},

	{"GET", "/v1/audit/key", anyKey, (*server).auditKey},
	{"GET", "/v1/server", adminKey, (*server).serverInfo},
	{"GET", "/v1/templates", anyKey, (*server).listTemplates},
	{"GET", "/v1/templates/{name}", anyKey, (*server).getTemplate},
	{"POST", "/v1/templates", adminKey, (*server).commitTemplate},
	{"PUT", "/v1/templates/{name}/image", adminKey, (*server).uploadImage},
	{"DELETE", "/v1/templates/{name}", adminKey, (*server).deleteTemplate},

	// The browser console's sign-in (console.go): they check the cookie
	// and the browser headers themselves.
	{"POST", "/v1/console/session", public, (*server).createConsoleSession},
	{"GET", "/v1/console/session", public, (*server).getConsoleSession},
	{"DELETE", "/v1/console/session", public, (*server).deleteConsoleSession},

	{"POST", "/v1/secrets", anyKey, (*server).createSecret},
	{"GET", "/v1/secrets", anyKey, (*server).listSecrets},
	{"PUT", "/v1/secrets/{name}", anyKey, (*server).rotateSecret},
	{"DELETE", "/v1/secrets/{name}", anyKey, (*server).deleteSecret},

	{"POST", "/v1/tenants", adminKey, (*server).createTenant},
	{"GET", "/v1/tenants", adminKey, (*server).listTenants},
	{"PATCH", "/v1/tenants/{name}", adminKey, (*server).updateTenant},
	{"POST", "/v1/keys", adminKey, (*server).createKey},
	{"GET", "/v1/keys", anyKey, (*server).listKeys},
	{"DELETE", "/v1/keys/{id}", adminKey, (*server).deleteKey},

	// Metering (metering.go). /metrics is outside /v1, where Prometheus
	// looks by default, and needs an admin key: it spans every tenant.
	{"GET", "/v1/usage", anyKey, (*server).usage},
	{"GET", "/metrics", adminKey, (*server).metrics},

	// The tenant's event stream and webhooks (events.go, webhooks.go).
	{"GET", "/v1/events", anyKey, (*server).streamEvents},
	{"POST", "/v1/webhooks", anyKey, (*server).createWebhook},
	{"GET", "/v1/webhooks", anyKey, (*server).listWebhooks},
	{"DELETE", "/v1/webhooks/{id}", anyKey, (*server).deleteWebhook},
	{"GET", "/v1/webhooks/{id}/deliveries", anyKey, (*server).webhookDeliveries},

	// Tasks (tasks.go): a harness run in a sandbox of its own.
	{"GET", "/v1/harnesses", anyKey, (*server).listHarnesses},
	{"POST", "/v1/tasks", anyKey, (*server).createTask},
	{"GET", "/v1/tasks", anyKey, (*server).listTasks},
	{"GET", "/v1/tasks/{id}", anyKey, (*server).getTask},
	{"GET", "/v1/tasks/{id}/events", anyKey, (*server).taskEvents},
	{"POST", "/v1/tasks/{id}/cancel", anyKey, (*server).cancelTask},
	{"GET", "/v1/tasks/{id}/artifacts", anyKey, (*server).taskArtifacts},

	// Approvals (approvals.go): questions put to a person. A sandbox
	// token gets 403 on each: an agent must not approve itself.
	{"GET", "/v1/approvals", anyKey, (*server).listApprovals},
	{"GET", "/v1/approvals/{id}", anyKey, (*server).getApproval},
	{"POST", "/v1/approvals/{id}/decision", anyKey, (*server).decideApproval},

	// Nodes (nodes.go): the hosts that run sandboxes for this control
	// plane. A joining node has no key: its one-time token is checked.
	{"POST", "/v1/nodes/tokens", adminKey, (*server).createJoinToken},
	{"POST", "/v1/nodes/join", public, (*server).joinNode},
	{"GET", "/v1/nodes", adminKey, (*server).listNodes},
	{"GET", "/v1/nodes/{name}", adminKey, (*server).getNode},
	{"POST", "/v1/nodes/{name}/drain", adminKey, (*server).drainNode},
	{"DELETE", "/v1/nodes/{name}/drain", adminKey, (*server).drainNode},
	{"DELETE", "/v1/nodes/{name}", adminKey, (*server).deleteNode},
}

// Handler is the API's HTTP handler. ServePort (ports_routed.go) also
// serves the sandbox ports that a front routes by host name.
type Handler struct {
	s *server
	h http.Handler
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Store is what the API reads and writes itself (store.Store has it):
// tenants, keys, tokens and console sessions through package tenancy, and
// a sandbox's record by id alone for routed ports (sandboxRecords).
// Everything else goes through the packages that own it.
type Store interface {
	tenancy.Store
	sandboxRecords
}

// New returns the HTTP handler of the API.
func New(m Manager, st Store, opts Options) *Handler {
	s := &server{m: m, maxJSON: opts.MaxJSONBody, now: opts.Now, log: opts.Logger, keepAlive: opts.KeepAlive, signer: opts.AuditSigner, records: st}
	if opts.Metrics != nil {
		s.metricsHandler = opts.Metrics.Handler()
	}
	s.events = opts.Events
	s.tasks = opts.Tasks
	s.approvals = opts.Approvals
	s.dataDir = opts.DataDir
	s.agentProtocol = opts.AgentProtocol
	s.nodes = opts.Nodes
	if s.keepAlive <= 0 {
		s.keepAlive = 15 * time.Second
	}
	if s.maxJSON <= 0 {
		s.maxJSON = 1 << 20
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.tenancy = tenancy.New(st, tenancy.Options{Now: s.now})
	if s.log == nil {
		s.log = slog.Default()
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := rt.handler
		mux.HandleFunc(rt.method+" "+rt.path, s.authorize(rt.access, func(w http.ResponseWriter, r *http.Request) {
			if opts.TraceContext {
				r = r.WithContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			}
			h(s, w, r)
		}))
	}
	// Without this the mux would answer unknown paths and methods in plain
	// text; clients expect the JSON error body everywhere.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); allow != "" {
			w.Header().Set("Allow", allow)
			s.fail(w, r, errf(http.StatusMethodNotAllowed, codeMethodNotAllowed,
				"method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
			return
		}
		s.fail(w, r, errf(http.StatusNotFound, codeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return &Handler{s: s, h: s.refuseNUL(mux)}
}

// refuseNUL answers 400 to a request whose path or query holds a NUL byte,
// before any route sees it: no id, name or parameter with one reaches the
// sandbox or the store, where a C string would end at the NUL and name
// something else than what was checked (the 2026 SOCKS5 hostname bypass).
func (s *server) refuseNUL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.IndexByte(r.URL.Path, 0) >= 0 {
			s.fail(w, r, invalidf("NUL byte in the URL path"))
			return
		}
		for k, vs := range r.URL.Query() {
			for _, v := range append([]string{k}, vs...) {
				if strings.IndexByte(v, 0) >= 0 {
					s.fail(w, r, invalidf("NUL byte in query parameter %q", k))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// allowed lists the methods that have a route for r's path, in
// routeMethods' order.
func allowed(mux *http.ServeMux, r *http.Request) string {
	var list []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			list = append(list, m)
		}
	}
	return strings.Join(list, ", ")
}

// routeMethods are the methods the route table serves, and HEAD, which
// the mux serves wherever GET is: an Allow header built from a fixed list
// missed PATCH (a PUT on /v1/tenants/{name} was a 404 instead of a 405
// naming PATCH).
var routeMethods = func() []string {
	order := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
	seen := map[string]bool{"HEAD": true}
	for _, rt := range routes {
		seen[rt.method] = true
	}
	var out []string
	for _, m := range order {
		if seen[m] {
			out = append(out, m)
			delete(seen, m)
		}
	}
	// Any other method a route may add, after the usual ones.
	return append(out, slices.Sorted(maps.Keys(seen))...)
}()

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers that this server takes API calls: one process serving
// on its own store is ready once it listens. (A control-plane replica
// answers /readyz itself, from its leader election: cmd/airlock/replica.go.)
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

//go:embed openapi.json
var openAPIDoc []byte

func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDoc)
}
