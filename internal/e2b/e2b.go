// Package e2b is Airlock's E2B-compatible facade: the control plane of
// E2B's API (create, get, list, connect, timeout, kill; pause and resume,
// snapshots and forks: lifecycle.go, snapshots.go; volumes: volumes.go;
// templates built from an image alone: builds.go) and the in-sandbox
// "envd" API (Connect RPC in JSON for processes and the filesystem, plain
// HTTP for file contents), so that the unmodified E2B SDKs drive Airlock
// sandboxes when E2B_API_URL and E2B_SANDBOX_URL point here. What the API
// lacks, the facade builds from what it has, over the same API: watching
// a directory is polling its listing (watch.go). proto/ holds the two
// services re-authored as .proto files, which the tests hold messages.go
// and the SDK's own descriptors to.
//
// Every call becomes calls of the public REST API through the Go client,
// with the caller's own credential: the API key for the control plane, a
// sandbox token (handed to the SDK as the envdAccessToken) for envd. So
// tenancy, quotas, egress policy and the audit log apply exactly as they do
// to native calls. It must never reach the sandbox service, the store or the
// runtime directly: a facade that did would be a back door around them.
// Sandbox ports reached the E2B way (host names, E2b-Sandbox-Port) are the
// one exception to calling the API: they go to the daemon's port proxy
// (Options.Ports), which asks the facade's traffic rule (hostports.go)
// and checks everything else itself.
package e2b

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/client"
)

// EnvdVersion is the envd version the facade reports. The SDK gates
// features on it: at 0.5.7 it sends no default user (>= 0.4.0), may close
// stdin (>= 0.5.2), may upload octet streams (>= 0.5.7) and may watch
// recursively (>= 0.1.4); file metadata (0.6.2) and the watcher options
// includeEntry and allowNetworkMounts (0.6.3, 0.6.4) stay off: Airlock has
// no file metadata and no network mounts.
const EnvdVersion = "0.5.7"

// Options configures the facade.
type Options struct {
	// APIURL is the REST API the facade calls, e.g. the daemon's own
	// loopback address; HTTPClient carries those calls (nil:
	// http.DefaultClient).
	APIURL     string
	HTTPClient *http.Client
	// Ports serves the sandbox ports E2B's SDKs reach by host name or by
	// E2b-Sandbox-Port (hostports.go): the daemon's port proxy. nil
	// answers them 501.
	Ports func(w http.ResponseWriter, r *http.Request, p PortRequest)
	// Domain is serve's --e2b-domain ("" for none): create and connect
	// answer it as the sandbox's domain, which the SDKs build host names
	// under (sandbox.getHost).
	Domain string
	// TrafficKey derives the trafficAccessToken of sandboxes created
	// without public traffic (hostports.go); the same key on every
	// replica and across restarts. Empty: no such token is valid.
	TrafficKey []byte
}

// Handler serves the facade. Its paths are relative to where it is
// mounted: the control plane at /, envd at /envd/.
type Handler struct {
	opts     Options
	mux      *http.ServeMux
	ptys     ptyTable
	watchers watchTable
	builds   *buildTable
}

// NewHandler returns the facade's handler. Close stops what it runs in
// the background (template builds).
func NewHandler(opts Options) *Handler {
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	h := &Handler{opts: opts, mux: http.NewServeMux(), ptys: ptyTable{m: map[string]map[uint32]string{}}, builds: newBuildTable()}
	h.routes()
	return h
}

// Close cancels the template builds in progress and waits for them.
func (h *Handler) Close() { h.builds.close() }

// routes: the control plane, then envd. Anything else answers in E2B's
// error shape.
func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("POST /sandboxes", h.createSandbox)
	m.HandleFunc("POST /v2/sandboxes", h.createSandbox)
	m.HandleFunc("GET /sandboxes", h.listSandboxes)
	m.HandleFunc("GET /v2/sandboxes", h.listSandboxes)
	m.HandleFunc("GET /sandboxes/{id}", h.getSandbox)
	m.HandleFunc("DELETE /sandboxes/{id}", h.deleteSandbox)
	m.HandleFunc("POST /sandboxes/{id}/timeout", h.setTimeout)
	m.HandleFunc("POST /sandboxes/{id}/refreshes", h.refresh)
	m.HandleFunc("POST /sandboxes/{id}/connect", h.connectSandbox)
	m.HandleFunc(connectV2, h.connectSandbox)
	m.HandleFunc("POST /sandboxes/{id}/pause", h.pauseSandbox)
	m.HandleFunc("POST /sandboxes/{id}/resume", h.resumeSandbox)
	m.HandleFunc("POST /sandboxes/{id}/snapshots", h.createSnapshot)
	m.HandleFunc("GET /snapshots", h.listSnapshots)
	m.HandleFunc("DELETE /templates/{id}", h.deleteTemplate)
	m.HandleFunc("POST /sandboxes/{id}/fork", h.forkSandbox)
	m.HandleFunc("POST /volumes", h.createVolume)
	m.HandleFunc("GET /volumes", h.listVolumes)
	m.HandleFunc("GET /volumes/{volumeID}", h.getVolume)
	m.HandleFunc("DELETE /volumes/{volumeID}", h.deleteVolume)
	m.HandleFunc("/volumecontent/{volumeID}/{rest...}", h.volumeContent)
	m.HandleFunc("POST /v3/templates", h.requestBuild)
	m.HandleFunc("GET /templates/{id}/files/{hash}", h.uploadLink)
	m.HandleFunc("POST /v2/templates/{id}/builds/{buildID}", h.startBuild)
	m.HandleFunc("GET /templates/{id}/builds/{buildID}/status", h.buildStatus)
	m.HandleFunc("GET /templates/aliases/{alias}", h.templateAlias)

	m.HandleFunc("POST /envd/process.Process/{method}", h.process)
	m.HandleFunc("POST /envd/filesystem.Filesystem/{method}", h.filesystem)
	m.HandleFunc("GET /envd/files", h.readFile)
	m.HandleFunc("POST /envd/files", h.writeFiles)
	m.HandleFunc("GET /envd/health", h.health)
	m.HandleFunc("/envd/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("%s %s is not part of Airlock's E2B facade", r.Method, r.URL.Path))
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, http.StatusNotImplemented, fmt.Sprintf("%s %s is not supported by Airlock's E2B facade (see the README)", r.Method, r.URL.Path))
	})
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.servePort(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) clientOf(cred string) *client.Client {
	return client.New(h.opts.APIURL, cred, client.WithHTTPClient(h.opts.HTTPClient))
}

// apiKey is the Airlock key of a control-plane call: X-API-Key as the SDK
// sends it (an Airlock key as it is, or e2b_ followed by its hex, for
// SDKs that insist keys look like E2B's), else a bearer token.
func apiKey(r *http.Request) string {
	k := strings.TrimSpace(r.Header.Get("X-API-Key"))
	if k == "" {
		if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			k = strings.TrimSpace(a)
		}
	}
	return unwrapKey(k)
}

// unwrapKey turns "e2b_" + hex(alk_...) back into the Airlock key; any
// other key is passed on unchanged (the API judges it).
func unwrapKey(k string) string {
	rest, ok := strings.CutPrefix(k, "e2b_")
	if !ok {
		return k
	}
	b, err := hex.DecodeString(rest)
	if err != nil || !strings.HasPrefix(string(b), "alk_") {
		return k
	}
	return string(b)
}

// WrapKey is an Airlock key in the shape E2B's key check expects:
// "e2b_" and the key's bytes in hex.
func WrapKey(k string) string { return "e2b_" + hex.EncodeToString([]byte(k)) }

// apiError is E2B's error body: {"code": <status>, "message": ...}.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeAPIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiError{Code: status, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// statusOf maps an error of the Airlock API to the status the facade
// answers: the API's own when it gave one.
func statusOf(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status != 0 {
		return ce.Status
	}
	switch {
	case errors.Is(err, client.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, client.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, client.ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, client.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, client.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, client.ErrLimitExceeded):
		return http.StatusTooManyRequests
	case errors.Is(err, client.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// sandboxGone is what E2B's edge answers (502, "The sandbox was not
// found") for a call on a sandbox that has ended: the SDKs raise their
// sandbox TimeoutException / TimeoutError for it. An envd call's token
// dies with its sandbox, so the API's 401 for it is that answer: E2B
// users catch the sandbox's end, not an authentication failure.
const sandboxGone = "The sandbox was not found: it was killed or reached its timeout, or its access token expired (Sandbox.connect mints a fresh one)"

// rpcErrorOf maps an error of the Airlock API on an envd call (made with
// the sandbox's token) to a Connect error.
func rpcErrorOf(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	code := codeInternal
	var ce *client.Error
	switch {
	case errors.Is(err, client.ErrUnauthenticated):
		// Connect's unavailable is what the SDKs make of E2B's 502.
		return &rpcError{Code: codeUnavailable, Message: sandboxGone}
	case errors.As(err, &ce) && ce.Code == "paused":
		// The API's 409 for a paused sandbox (not created with
		// auto_resume): it must be resumed, connect does.
		code = codeFailedPrecondition
	case errors.Is(err, client.ErrNotFound):
		code = codeNotFound
	case errors.Is(err, client.ErrInvalid):
		code = codeInvalidArgument
	case errors.Is(err, client.ErrForbidden):
		code = codePermissionDenied
	case errors.Is(err, client.ErrConflict):
		code = codeFailedPrecondition
	case errors.Is(err, client.ErrLimitExceeded):
		code = codeResourceExhausted
	case errors.Is(err, client.ErrUnavailable):
		code = codeUnavailable
	}
	return &rpcError{Code: code, Message: err.Error()}
}

// ptyTable maps the pids the facade gives PTYs (Airlock sessions have
// names, E2B's terminals pids) to session ids, per sandbox. It is only a
// name table: every use goes through the API with the caller's credential,
// which decides whether the session may be touched.
type ptyTable struct {
	mu   sync.Mutex
	next uint32
	m    map[string]map[uint32]string
}

// ptyPidBase keeps the facade's pids apart from the sandbox's own (pid_max
// is at most 4194304).
const ptyPidBase = 1 << 30

func (t *ptyTable) add(sandbox, sid string) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	pid := ptyPidBase + t.next
	if t.m[sandbox] == nil {
		t.m[sandbox] = map[uint32]string{}
	}
	t.m[sandbox][pid] = sid
	return pid
}

func (t *ptyTable) get(sandbox string, pid uint32) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sid, ok := t.m[sandbox][pid]
	return sid, ok
}

func (t *ptyTable) remove(sandbox string, pid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m[sandbox], pid)
	if len(t.m[sandbox]) == 0 {
		delete(t.m, sandbox)
	}
}

func (t *ptyTable) forget(sandbox string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, sandbox)
}
