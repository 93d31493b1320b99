package clienttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// image is a registry image the fake can import: two layers.
type image struct {
	hold <-chan struct{}
}

// AddImage makes ref importable (POST /v1/templates with image ref) as an
// image of two layers. With hold not nil an import of it waits, after its
// first layer, until hold is closed or the import's request ends.
func (s *Server) AddImage(ref string, hold <-chan struct{}) {
	s.mu.Lock()
	s.images[ref] = &image{hold: hold}
	s.mu.Unlock()
}

// builtin are the fake's templates other than imported ones: base and, as
// if built, python.
var builtin = map[string]client.Template{
	"base":   {Name: "base", Description: "the host's /usr"},
	"python": {Name: "python", From: "base", Description: "built"},
}

// templateLocked returns a template the fake has.
func (s *Server) templateLocked(name string) (client.Template, bool) {
	if t, ok := builtin[name]; ok {
		return t, true
	}
	t, ok := s.templates[name]
	return t, ok
}

// listTemplates lists them, base first.
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := []client.Template{builtin["base"], builtin["python"]}
	for _, t := range s.templates {
		out = append(out, t)
	}
	s.mu.Unlock()
	slices.SortFunc(out[2:], func(a, b client.Template) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, 200, map[string]any{"templates": out})
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, ok := s.templateLocked(r.PathValue("name"))
	s.mu.Unlock()
	if !ok {
		fail(w, 404, "not_found", fmt.Sprintf("template %q", r.PathValue("name")))
		return
	}
	writeJSON(w, 200, t)
}

// importImage is POST /v1/templates with an image, as an admin, streamed
// (Accept: text/event-stream) as the client asks for it: progress per
// layer, then the template or an error event. Committing a build sandbox
// (the same route with sandbox_id) is not faked.
func (s *Server) importImage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		client.ImportImageRequest
		SandboxID string `json:"sandbox_id"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.SandboxID != "" || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		fail(w, 400, "invalid_argument", "the fake imports images only, streamed (Accept: text/event-stream)")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	event := func(typ string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	s.mu.Lock()
	img := s.images[req.Image]
	s.mu.Unlock()
	switch {
	case req.Name == "base" || req.Name == "" || strings.ContainsAny(req.Name, "/:_ .") || strings.ToLower(req.Name) != req.Name:
		event("error", map[string]string{"code": "invalid_argument", "message": fmt.Sprintf("template name %q must be 1-63 of [a-z0-9-], not base", req.Name)})
		return
	case req.Credentials != "":
		event("error", map[string]string{"code": "not_found", "message": "credentials: secret " + req.Credentials})
		return
	case img == nil:
		event("error", map[string]string{"code": "not_found", "message": fmt.Sprintf("image %s: manifest unknown", req.Image)})
		return
	}
	sum := sha256.Sum256([]byte(req.Image))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	for layer := 1; layer <= 2; layer++ {
		ld := fmt.Sprintf("sha256:%064d", layer)
		event("progress", client.ImageProgress{Layer: layer, Layers: 2, Digest: ld, Total: 1024})
		event("progress", client.ImageProgress{Layer: layer, Layers: 2, Digest: ld, Bytes: 1024, Total: 1024, Done: true})
		if layer == 1 && img.hold != nil {
			select {
			case <-img.hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	t := client.Template{Name: req.Name, From: "image", Description: req.Description, Image: req.Image, Digest: digest,
		CreatedAt: time.Now().UTC().Truncate(time.Second), SizeBytes: 2048}
	s.mu.Lock()
	s.templates[req.Name] = t
	s.mu.Unlock()
	event("template", t)
}
