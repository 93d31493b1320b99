package api

import (
	"context"
	"net/http"
	"time"

	"github.com/airlockhq/airlock/internal/nodes"
)

// Nodes is the control plane's registry of nodes (nodes.Service).
type Nodes interface {
	MintToken(ctx context.Context, ttl time.Duration) (nodes.TokenReply, error)
	Join(ctx context.Context, req nodes.JoinRequest) (nodes.JoinReply, error)
	List(ctx context.Context) ([]nodes.Node, error)
	Get(ctx context.Context, name string) (nodes.Node, error)
	Drain(ctx context.Context, name string, drained bool) (nodes.Node, error)
	Remove(ctx context.Context, name string, force bool) error
}

var errNoNodes = errf(http.StatusServiceUnavailable, codeUnavailable, "this server keeps no node registry")

// createJoinToken mints a one-time join token: {"ttl_s"} (60 to 604800,
// default 3600), all optional.
func (s *server) createJoinToken(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	var req struct {
		TTLS int64 `json:"ttl_s"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.TTLS < 0 {
		s.fail(w, r, invalidf("field \"ttl_s\" is %d; want %d to %d", req.TTLS, int(nodes.MinTokenTTL.Seconds()), int(nodes.MaxTokenTTL.Seconds())))
		return
	}
	tok, err := s.nodes.MintToken(r.Context(), time.Duration(req.TTLS)*time.Second)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, tok)
}

// joinNode exchanges a join token for a node's certificate. It takes no
// API key: the token is the credential.
func (s *server) joinNode(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	var req nodes.JoinRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := s.nodes.Join(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, rep)
}

func (s *server) listNodes(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	list, err := s.nodes.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []nodes.Node{}
	}
	writeJSON(w, http.StatusOK, struct {
		Nodes []nodes.Node `json:"nodes"`
	}{list})
}

func (s *server) getNode(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	n, err := s.nodes.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

// drainNode (POST) stops new placements on the node; DELETE lets them go
// on again.
func (s *server) drainNode(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	n, err := s.nodes.Drain(r.Context(), r.PathValue("name"), r.Method == http.MethodPost)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

// deleteNode forgets a node; ?force=true even while it holds sandboxes.
func (s *server) deleteNode(w http.ResponseWriter, r *http.Request) {
	if s.nodes == nil {
		s.fail(w, r, errNoNodes)
		return
	}
	if err := checkQuery(r, []string{"force"}); err != nil {
		s.fail(w, r, err)
		return
	}
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		s.fail(w, r, invalidf("query parameter force=%q: want true or false", v))
		return
	}
	err := s.nodes.Remove(r.Context(), r.PathValue("name"), force)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
