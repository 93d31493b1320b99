package api

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// Templates (sandbox/templates.go): every key lists and uses them; an
// admin saves one from its own build sandbox and deletes them.

func (s *server) listTemplates(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.Templates(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Templates []runtime.TemplateInfo `json:"templates"`
	}{list})
}

func (s *server) getTemplate(w http.ResponseWriter, r *http.Request) {
	t, err := s.m.Template(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *server) commitTemplate(w http.ResponseWriter, r *http.Request) {
	// One route, two ways: from a build sandbox (sandbox_id), or from an
	// image (images.go).
	var body struct {
		sandbox.CommitTemplateRequest
		Image       string   `json:"image"`
		Credentials string   `json:"credentials"`
		Allow       []string `json:"allow"`
		Insecure    bool     `json:"insecure"`
	}
	if err := readJSON(w, r, s.maxJSON, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	req := body.CommitTemplateRequest
	if body.Image != "" || body.Credentials != "" || len(body.Allow) > 0 || body.Insecure {
		if req.SandboxID != "" {
			s.fail(w, r, invalidf("give either sandbox_id (a build) or image, not both"))
			return
		}
		s.importTemplate(w, r, sandbox.ImportTemplateRequest{Name: req.Name, Image: body.Image, Description: req.Description,
			Labels: req.Labels, Credentials: body.Credentials, Allow: body.Allow, Insecure: body.Insecure, Start: req.Start})
		return
	}
	t, err := s.m.CommitTemplate(r.Context(), callerOf(r), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/templates/"+t.Name)
	writeJSON(w, http.StatusCreated, t)
}

func (s *server) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteTemplate(r.Context(), callerOf(r), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
