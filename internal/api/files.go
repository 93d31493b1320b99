package api

import (
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// filePath reads the required path query parameter of the files routes.
func filePath(r *http.Request, known ...string) (string, error) {
	if err := checkQuery(r, append(known, "path")); err != nil {
		return "", err
	}
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", invalidf("query parameter \"path\" is required")
	}
	if len(p) > sandbox.MaxPath {
		return "", invalidf("query parameter \"path\" is %d bytes; at most %d", len(p), sandbox.MaxPath)
	}
	return p, nil
}

func (s *server) writeFile(w http.ResponseWriter, r *http.Request) {
	p, err := filePath(r, "mode")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mode, err := parseMode("query parameter mode", r.URL.Query().Get("mode"), 0o644)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.m.WriteFile(r.Context(), callerOf(r), r.PathValue("id"), p, r.Body, fs.FileMode(mode))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}{p, n})
}

// entryJSON is one file of a directory listing.
type entryJSON struct {
	Name  string    `json:"name"`
	Path  string    `json:"path"`
	Type  string    `json:"type"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"`
	Mtime time.Time `json:"mtime"`
}

func toEntry(fi runtime.FileInfo) entryJSON {
	typ := "other"
	switch {
	case fi.IsDir || fi.Mode.IsDir():
		typ = "dir"
	case fi.Mode&fs.ModeSymlink != 0:
		typ = "symlink"
	case fi.Mode.IsRegular():
		typ = "file"
	}
	return entryJSON{
		Name: fi.Name, Path: fi.Path, Type: typ, Size: fi.Size,
		Mode: "0" + strconv.FormatUint(uint64(fi.Mode.Perm()), 8), Mtime: fi.ModTime.UTC(),
	}
}

func (s *server) readFile(w http.ResponseWriter, r *http.Request) {
	p, err := filePath(r, "list")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := queryBool(r, "list")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	if list {
		infos, err := s.m.ListDir(r.Context(), c, id, p)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := struct {
			Entries []entryJSON `json:"entries"`
		}{make([]entryJSON, 0, len(infos))}
		for _, fi := range infos {
			out.Entries = append(out.Entries, toEntry(fi))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	// Stat first so that a missing file or a directory is a clean JSON
	// error rather than a broken download, and the size can be announced.
	fi, err := s.m.Stat(r.Context(), c, id, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if what := notAFile(fi); what != "" {
		hint := ""
		if what == "a directory" {
			hint = " (list a directory with list=1)"
		}
		s.fail(w, r, invalidf("path %q is %s, not a regular file%s", p, what, hint))
		return
	}
	dl := &download{w: w, size: -1}
	if toEntry(fi).Type == "file" {
		dl.size = fi.Size // a symlink's own size is not its target's
	}
	n, err := s.m.ReadFile(r.Context(), c, id, p, dl)
	s.finishDownload(w, r, dl, n, err)
}

func (s *server) removeFile(w http.ResponseWriter, r *http.Request) {
	p, err := filePath(r, "recursive")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := queryBool(r, "recursive")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.m.Remove(r.Context(), callerOf(r), r.PathValue("id"), p, rec); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) mkdir(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Path string `json:"path"`
		Mode string `json:"mode"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Path == "" {
		s.fail(w, r, invalidf("field \"path\" is required"))
		return
	}
	mode, err := parseMode("field \"mode\"", req.Mode, 0o755)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.m.Mkdir(r.Context(), callerOf(r), r.PathValue("id"), req.Path, fs.FileMode(mode)); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) move(w http.ResponseWriter, r *http.Request) {
	var req struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.From == "" || req.To == "" {
		s.fail(w, r, invalidf("fields \"from\" and \"to\" are required"))
		return
	}
	if err := s.m.Move(r.Context(), callerOf(r), r.PathValue("id"), req.From, req.To); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
