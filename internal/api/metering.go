package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// sandboxMetrics is GET /v1/sandboxes/{id}/metrics.
func (s *server) sandboxMetrics(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, nil); err != nil {
		s.fail(w, r, err)
		return
	}
	m, err := s.m.SandboxMetrics(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// sandboxMetricsHistory is GET /v1/sandboxes/{id}/metrics/history: the
// readings of the last minutes, which the console's charts open with.
func (s *server) sandboxMetricsHistory(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, nil); err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.m.SandboxMetricsHistory(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// MaxMetricsIDs bounds the sandboxes of one GET /v1/sandboxes/metrics.
const MaxMetricsIDs = 100

// sandboxesMetrics is GET /v1/sandboxes/metrics?ids=a,b: the metrics of
// several of the caller's sandboxes in one call (the console's list polls
// it). An id the caller does not own, or that does not exist, is left out,
// as GET /v1/sandboxes/{id}/metrics would answer 404 for it.
func (s *server) sandboxesMetrics(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, []string{"ids"}); err != nil {
		s.fail(w, r, err)
		return
	}
	raw := r.URL.Query().Get("ids")
	ids := strings.Split(raw, ",")
	switch {
	case raw == "":
		s.fail(w, r, invalidf("query parameter \"ids\" is required: sandbox ids separated by commas"))
		return
	case len(ids) > MaxMetricsIDs:
		s.fail(w, r, invalidf("query parameter \"ids\" names %d sandboxes; at most %d", len(ids), MaxMetricsIDs))
		return
	case slices.Contains(ids, ""):
		s.fail(w, r, invalidf("query parameter \"ids\" holds an empty id"))
		return
	}
	out := []sandbox.Metrics{}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		m, err := s.m.SandboxMetrics(r.Context(), callerOf(r), id)
		if errors.Is(err, sandbox.ErrNotFound) {
			continue
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, struct {
		Metrics []sandbox.Metrics `json:"metrics"`
	}{out})
}

// usage is GET /v1/usage?from=&to=&tenant=.
func (s *server) usage(w http.ResponseWriter, r *http.Request) {
	q, err := usageQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := s.m.Usage(r.Context(), callerOf(r), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// usageQuery reads from and to (RFC 3339, both optional: the window is
// open before from and ends now without to) and tenant.
func usageQuery(r *http.Request) (sandbox.UsageQuery, error) {
	var q sandbox.UsageQuery
	if err := checkQuery(r, []string{"from", "to", "tenant"}); err != nil {
		return q, err
	}
	v := r.URL.Query()
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		// An offset's "+" left unescaped in a URL arrives as a space.
		t, err := time.Parse(time.RFC3339Nano, strings.Replace(s, " ", "+", 1))
		if err != nil {
			return q, invalidf("query parameter %s=%q: want an RFC 3339 time such as 2026-01-02T00:00:00Z", p.name, s)
		}
		*p.t = t
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return q, invalidf("query parameters from=%s and to=%s: from must be before to", v.Get("from"), v.Get("to"))
	}
	if t := v.Get("tenant"); t != "" {
		if len(t) > 128 {
			return q, invalidf("query parameter tenant: at most 128 bytes")
		}
		q.TenantID = t
	}
	return q, nil
}

// metrics is GET /metrics, the Prometheus scrape (admin key only: the
// numbers span every tenant).
func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.metricsHandler == nil {
		s.fail(w, r, errf(http.StatusNotFound, codeNotFound, "this server runs without Prometheus metrics"))
		return
	}
	s.metricsHandler.ServeHTTP(w, r)
}
