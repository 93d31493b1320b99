package e2b

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/airlockhq/airlock/client"
)

// httpCaller is envdCaller for envd's plain HTTP routes, whose errors are
// E2B's {"code", "message"} bodies.
func (h *Handler) httpCaller(w http.ResponseWriter, r *http.Request) (*client.Client, string, bool) {
	c, id, rerr := h.envdCaller(r)
	if rerr != nil {
		writeAPIError(w, httpStatusOf(rerr.Code), rerr.Message)
		return nil, "", false
	}
	return c, id, true
}

// writeEnvdError answers an error of the API on an envd HTTP call: E2B's
// {"code", "message"}, or for a token the API no longer knows, the body
// E2B's edge gives for an ended sandbox (see sandboxGone).
func writeEnvdError(w http.ResponseWriter, id string, err error) {
	if !errors.Is(err, client.ErrUnauthenticated) {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusBadGateway, struct {
		SandboxID string `json:"sandboxId"`
		apiError
	}{id, apiError{Code: http.StatusBadGateway, Message: sandboxGone}})
}

// lazyWriter sends the headers of a successful download with its first
// byte, so that an error found before it can still be an error answer.
type lazyWriter struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "application/octet-stream")
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}

// readFile serves GET /files?path=P: the file's bytes.
func (h *Handler) readFile(w http.ResponseWriter, r *http.Request) {
	c, id, ok := h.httpCaller(w, r)
	if !ok {
		return
	}
	p := r.URL.Query().Get("path")
	if p == "" {
		writeAPIError(w, http.StatusBadRequest, "path is missing")
		return
	}
	lw := &lazyWriter{w: w}
	_, err := c.ReadFile(r.Context(), id, absPath(p), lw)
	switch {
	case err != nil && !lw.started:
		writeEnvdError(w, id, err)
	case err != nil:
		// Too late for an error answer: cut the body short so the client
		// sees a broken download, not a short file.
		panic(http.ErrAbortHandler)
	case !lw.started:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	}
}

// writeInfo is envd's EntryInfo of the HTTP API.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// writeFiles serves POST /files: a multipart form of "file" parts (each
// named by ?path= or its file name), or one octet stream for ?path=.
func (h *Handler) writeFiles(w http.ResponseWriter, r *http.Request) {
	c, id, ok := h.httpCaller(w, r)
	if !ok {
		return
	}
	q := r.URL.Query().Get("path")
	var out []writeInfo
	put := func(p string, body io.Reader) bool {
		if p == "" {
			writeAPIError(w, http.StatusBadRequest, "the file's path is missing (?path= or the part's file name)")
			return false
		}
		abs := absPath(p)
		if _, err := c.WriteFile(r.Context(), id, abs, body, 0o644); err != nil {
			writeEnvdError(w, id, err)
			return false
		}
		out = append(out, writeInfo{Name: path.Base(abs), Type: "file", Path: abs})
		return true
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		var body io.Reader = r.Body
		if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				writeAPIError(w, http.StatusBadRequest, "bad gzip body: "+err.Error())
				return
			}
			defer zr.Close()
			body = zr
		}
		if !put(q, body) {
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "bad multipart body: "+err.Error())
		return
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "bad multipart body: "+err.Error())
			return
		}
		if part.FormName() != "file" {
			continue
		}
		p := q
		if p == "" {
			// Not part.FileName(): it keeps only the last element, and
			// the SDK names each file by its whole path.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p = params["filename"]
		}
		if !put(p, part) {
			return
		}
	}
	if len(out) == 0 {
		writeAPIError(w, http.StatusBadRequest, "no file part in the form")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// health answers 204 while the sandbox runs, 502 while it is paused or
// once it is gone (the SDK's isRunning reads 502 as "not running").
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	tok, id := r.Header.Get("X-Access-Token"), r.Header.Get("E2b-Sandbox-Id")
	if tok == "" || id == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sb, err := h.clientOf(tok).GetSandbox(r.Context(), id)
	if err != nil || !running(sb) {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
