package api

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func (s *server) createSession(w http.ResponseWriter, r *http.Request) {
	var req sandbox.SessionRequest
	if err := readJSON(w, r, s.maxJSON, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.m.CreateSession(r.Context(), callerOf(r), r.PathValue("id"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.ListSessions(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Sessions []sandbox.SessionInfo `json:"sessions"`
	}{list})
}

func (s *server) sessionExec(w http.ResponseWriter, r *http.Request) {
	var req sandbox.SessionExecRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Command == "" {
		s.fail(w, r, invalidf("field \"command\" is required"))
		return
	}
	if req.TimeoutS < 0 || req.TimeoutS > maxTimeoutS {
		s.fail(w, r, invalidf("field \"timeout_s\" is %d; want 0 (60 s) to %d", req.TimeoutS, maxTimeoutS))
		return
	}
	res, err := s.m.SessionExec(r.Context(), callerOf(r), r.PathValue("id"), r.PathValue("sid"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteSession(r.Context(), callerOf(r), r.PathValue("id"), r.PathValue("sid")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
