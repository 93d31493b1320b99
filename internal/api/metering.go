package api

import (
	"net/http"
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
