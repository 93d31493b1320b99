package main

import (
	"errors"
	"net/http"
	"strings"

	"github.com/airlockhq/airlock/internal/tenancy"
)

// serveMetrics answers /metrics on this replica itself, never forwarded:
// a Prometheus that scrapes every pod (the chart's ServiceMonitor) gets
// each replica's process series once, and the daemon-wide series once,
// from the leader (metrics.Replica). Admin keys only, as the API's
// /metrics; a follower looks each key up in the store (tenancy's
// NoKeyCache), since deletions reach the leader's cache, not its own.
func (rp *replica) serveMetrics(w http.ResponseWriter, r *http.Request, term *leaderTerm) {
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	cred = strings.TrimSpace(cred)
	if !strings.EqualFold(scheme, "Bearer") || cred == "" {
		replicaError(w, http.StatusUnauthorized, "unauthenticated", "missing credential: send Authorization: Bearer <admin API key>")
		return
	}
	p, err := rp.auth(r.Context(), cred)
	switch {
	case errors.Is(err, tenancy.ErrBadCredential):
		replicaError(w, http.StatusUnauthorized, "unauthenticated", err.Error())
		return
	case err != nil:
		replicaUnavailable(w, "check the credential: "+err.Error())
		return
	case !p.Admin:
		replicaError(w, http.StatusForbidden, "forbidden", "/metrics is for admin keys")
		return
	}
	if term != nil {
		rp.metrics.Handler(term.metrics).ServeHTTP(w, r)
		return
	}
	rp.metrics.Handler(nil).ServeHTTP(w, r)
}
