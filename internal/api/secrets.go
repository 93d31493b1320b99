package api

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
)

func (s *server) createSecret(w http.ResponseWriter, r *http.Request) {
	var spec secrets.Spec
	if err := readJSON(w, r, s.maxJSON, &spec, false); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.m.CreateSecret(r.Context(), callerOf(r), spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/secrets/"+info.Name)
	writeJSON(w, http.StatusCreated, info)
}

func (s *server) listSecrets(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.ListSecrets(r.Context(), callerOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Secrets []sandbox.SecretInfo `json:"secrets"`
	}{list})
}

func (s *server) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var req sandbox.RotateRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.m.RotateSecret(r.Context(), callerOf(r), r.PathValue("name"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteSecret(r.Context(), callerOf(r), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
