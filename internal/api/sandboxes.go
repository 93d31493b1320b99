package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// sandboxJSON is a sandbox as clients see it: no tenant id and no
// environment (it may hold values the caller passed in and nobody else
// should read back from a listing).
type sandboxJSON struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Reason    string            `json:"reason,omitempty"`
	Template  string            `json:"template"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	EndedAt   time.Time         `json:"ended_at,omitzero"` // once stopped or failed
	Limits    limitsJSON        `json:"limits"`
	Metadata  map[string]string `json:"metadata"`
	Workdir   string            `json:"workdir"`
	Network   networkJSON       `json:"network"`
	// IdleTimeoutS is 0 when the sandbox has no idle timeout.
	IdleTimeoutS int64 `json:"idle_timeout_s"`
	// AgentVersion is the protocol version of the running sandbox's agent
	// (GET of one sandbox only; left out when not known).
	AgentVersion int `json:"agent_version,omitempty"`
	// Node is the node it runs on ("local": the server's own host); left
	// out until it is placed.
	Node string `json:"node,omitempty"`
	// Lifecycle: pause settings (auto_resume, idle_action, max_paused_s),
	// when it was paused, and where it came from (snapshot, fork_of) and
	// what it mounts (volumes).
	*sandbox.Lifecycle
}

type limitsJSON struct {
	CPUs     float64 `json:"cpus"`
	MemoryMB int64   `json:"memory_mb"`
	Pids     int64   `json:"pids"`
	DiskMB   int64   `json:"disk_mb"`
}

func toJSON(sb sandboxrec.Sandbox) sandboxJSON {
	md := sb.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return sandboxJSON{
		ID: sb.ID, State: sb.State, Reason: sb.Reason, Template: sb.Template,
		CreatedAt: sb.CreatedAt.UTC(), ExpiresAt: sb.ExpiresAt.UTC(), EndedAt: utcOrZero(sb.EndedAt),
		Limits:   limitsJSON{CPUs: sb.CPUs, MemoryMB: sb.MemoryMB, Pids: sb.Pids, DiskMB: sb.DiskMB},
		Metadata: md, Workdir: sb.Workdir, Network: recordNetwork(sb), IdleTimeoutS: sb.IdleTimeoutS, Node: sb.Node,
		Lifecycle: lifecycleJSON(sb),
	}
}

// utcOrZero is t in UTC, the zero time staying zero (and left out).
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

const maxTimeoutS = int64(sandbox.MaxTimeout / time.Second)

func validateCreate(req *sandbox.CreateRequest) error {
	// 0 asks for a limit's default; the ranges are the runtime's, which
	// the service checks again on every other way in (MCP, E2B, tasks).
	lim := runtime.Limits{CPUs: req.CPUs, MemoryMB: req.MemoryMB, Pids: req.Pids, DiskMB: req.DiskMB}
	var re *runtime.RangeError
	if errors.As(lim.WithDefaults().Validate(), &re) {
		return invalidf("field %q is %s; want %s (0 or absent: the default)", re.Field, re.Value, re.Range)
	}
	switch {
	case req.TimeoutS < 0 || req.TimeoutS > maxTimeoutS:
		return invalidf("field \"timeout_s\" is %d; want 1 to %d", req.TimeoutS, maxTimeoutS)
	}
	return nil
}

func (s *server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req sandbox.CreateRequest
	if err := readJSON(w, r, s.maxJSON, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := validateCreate(&req); err != nil {
		s.fail(w, r, err)
		return
	}
	sb, err := s.m.Create(r.Context(), callerOf(r), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sandboxes/"+sb.ID)
	writeJSON(w, http.StatusCreated, toJSON(sb))
}

const (
	defaultLimit = 100
	maxLimit     = 1000
)

// validCursor bounds the ids a client can send as a cursor (1 to 128
// letters, digits, '.', '_' or '-'); the store compares them, so there is
// no reason to pass it anything else.
func validCursor(s string) bool { return len(s) <= 128 && idChars(s) }

var states = map[string]bool{
	sandboxrec.Creating: true, sandboxrec.Running: true, sandboxrec.Paused: true,
	sandboxrec.Stopped: true, sandboxrec.Failed: true,
}

// pageSize reads a list's limit query parameter: the page size.
func pageSize(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalidf("query parameter limit=%q: want an integer from 1 to %d", v, maxLimit)
	}
	return n, nil
}

// pageOf cuts a list fetched with one more than page items to the page,
// and returns the id to pass as after for the next page ("" if none).
func pageOf[T any](list []T, page int, id func(T) string) ([]T, string) {
	if len(list) <= page {
		return list, ""
	}
	return list[:page], id(list[page-1])
}

// listFilter reads GET /v1/sandboxes's query. Its Limit is one more than
// the page size, to learn whether another page follows.
func listFilter(r *http.Request) (f sandboxrec.Filter, page int, err error) {
	if err := checkQuery(r, []string{"state", "limit", "after"}, "metadata."); err != nil {
		return f, 0, err
	}
	q := r.URL.Query()
	if st := q.Get("state"); st != "" && !states[st] {
		return f, 0, invalidf("query parameter state=%q: want creating, running, paused, stopped or failed", st)
	}
	f.State = q.Get("state")
	if page, err = pageSize(q); err != nil {
		return f, 0, err
	}
	if v, ok := q["after"]; ok && v[0] != "" {
		if !validCursor(v[0]) {
			return f, 0, invalidf("query parameter after=%q: want a sandbox id", v[0])
		}
		f.After = v[0]
	}
	for k, v := range q {
		if key, ok := strings.CutPrefix(k, "metadata."); ok {
			if f.Metadata == nil {
				f.Metadata = map[string]string{}
			}
			f.Metadata[key] = v[0]
		}
	}
	f.Limit = page + 1
	return f, page, nil
}

func (s *server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	f, page, err := listFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := callerOf(r)
	f.TenantID = c.TenantID
	list, err := s.m.List(r.Context(), c, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, next := pageOf(list, page, func(sb sandboxrec.Sandbox) string { return sb.ID })
	out := struct {
		Sandboxes []sandboxJSON `json:"sandboxes"`
		Next      string        `json:"next"`
	}{Sandboxes: make([]sandboxJSON, 0, len(list)), Next: next}
	for _, sb := range list {
		out.Sandboxes = append(out.Sandboxes, toJSON(sb))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) getSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := s.m.Get(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := toJSON(sb)
	out.AgentVersion = s.m.AgentVersion(r.Context(), sb)
	writeJSON(w, http.StatusOK, out)
}

func (s *server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	if err := s.m.Delete(r.Context(), callerOf(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) setTimeout(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TimeoutS int64 `json:"timeout_s"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.TimeoutS < 1 || req.TimeoutS > maxTimeoutS {
		s.fail(w, r, invalidf("field \"timeout_s\" is %d; want 1 to %d", req.TimeoutS, maxTimeoutS))
		return
	}
	sb, err := s.m.SetTimeout(r.Context(), callerOf(r), r.PathValue("id"), time.Duration(req.TimeoutS)*time.Second)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(sb))
}

// recordNetwork is the record's policy as the API shows it.
func recordNetwork(sb sandboxrec.Sandbox) networkJSON {
	p := egress.Policy{Mode: egress.ModeNone}
	if sb.Network != "" {
		// Written by the service from a compiled policy; unreadable only
		// if the database was edited by hand.
		json.Unmarshal([]byte(sb.Network), &p)
	}
	return policyJSON(p)
}
