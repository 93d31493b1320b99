package api

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// Template imports from OCI and Docker images (sandbox/images.go). With
// Accept: text/event-stream the answer is a stream of "progress" events
// (one layer's bytes read of its total) and one "template" event, or an
// "error" event; otherwise 201 and the template once imported.

// maxImageUpload bounds an uploaded tarball.
const maxImageUpload = 16 << 30

// importTemplate runs an import, answering as the client asked.
func (s *server) importTemplate(w http.ResponseWriter, r *http.Request, req sandbox.ImportTemplateRequest) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		t, err := s.m.ImportTemplate(r.Context(), callerOf(r), req, nil)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Location", "/v1/templates/"+t.Name)
		writeJSON(w, http.StatusCreated, t)
		return
	}
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	if err := st.begin(); err != nil {
		return
	}
	stop := st.keepAlive(s.keepAlive)
	t, err := s.m.ImportTemplate(r.Context(), callerOf(r), req, func(p runtime.ImageProgress) {
		st.event("progress", p)
	})
	stop()
	if err != nil {
		status, code, msg := statusOf(err)
		if status >= 500 {
			s.log.Error("import template", "name", req.Name, "err", err)
		}
		st.event("error", errorDetail{Code: code, Message: msg})
		return
	}
	st.event("template", t)
}

// uploadImage is PUT /v1/templates/{name}/image: the body is a `docker
// save` or OCI layout tarball, spooled to the data dir and imported.
func (s *server) uploadImage(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, []string{"description", "filename"}); err != nil {
		s.fail(w, r, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-tar" && ct != "application/octet-stream" {
		s.fail(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: codeInvalid,
			message: fmt.Sprintf("Content-Type %q: send the tarball as application/x-tar", ct)})
		return
	}
	if !callerOf(r).Admin {
		s.fail(w, r, fmt.Errorf("%w: only an admin key can import templates", sandbox.ErrInvalid))
		return
	}
	dir := s.dataDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, ".upload-*.tar")
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: spool upload: %v", sandbox.ErrUnavailable, err))
		return
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, http.MaxBytesReader(w, r.Body, maxImageUpload))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	fileName := r.URL.Query().Get("filename")
	if fileName == "" {
		fileName = "upload.tar"
	}
	s.importTemplate(w, r, sandbox.ImportTemplateRequest{Name: r.PathValue("name"), File: f.Name(), FileName: fileName,
		Description: r.URL.Query().Get("description")})
}
