package api

import (
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func (s *server) getNetwork(w http.ResponseWriter, r *http.Request) {
	p, err := s.m.GetNetwork(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, policyJSON(p))
}

func (s *server) setNetwork(w http.ResponseWriter, r *http.Request) {
	var p egress.Policy
	if err := readJSON(w, r, s.maxJSON, &p, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if p.Mode == "" {
		s.fail(w, r, invalidf("field \"mode\" is required: \"none\" or \"allowlist\""))
		return
	}
	got, err := s.m.SetNetwork(r.Context(), callerOf(r), r.PathValue("id"), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, policyJSON(got))
}

// networkJSON is a policy as the API shows it: both lists, empty rather
// than absent; ask and its timeout only when the policy asks.
type networkJSON struct {
	Mode        egress.Mode `json:"mode"`
	Allow       []string    `json:"allow"`
	Deny        []string    `json:"deny"`
	Ask         egress.Ask  `json:"ask,omitzero"`
	AskTimeoutS int64       `json:"ask_timeout_s,omitempty"`
}

func policyJSON(p egress.Policy) networkJSON {
	if p.Mode == "" {
		p.Mode = egress.ModeNone
	}
	out := networkJSON{Mode: p.Mode, Allow: nonNil(p.Allow), Deny: nonNil(p.Deny), Ask: p.Ask}
	if !p.Ask.IsZero() {
		out.AskTimeoutS = p.AskTimeoutS
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *server) networkLog(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, []string{"after", "limit"}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, invalidf("query parameter after=%q: want the seq of the last event seen (0 or more)", v))
			return
		}
		after = n
	}
	limit := sandbox.MaxNetLogPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > sandbox.MaxNetLogPage {
			s.fail(w, r, invalidf("query parameter limit=%q: want an integer from 1 to %d", v, sandbox.MaxNetLogPage))
			return
		}
		limit = n
	}
	events, err := s.m.NetworkLog(r.Context(), callerOf(r), r.PathValue("id"), after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Events []egress.Event `json:"events"`
	}{events})
}
