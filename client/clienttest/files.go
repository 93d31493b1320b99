package clienttest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

type fileMode = uint32

type file struct {
	data  []byte
	mode  fileMode
	mtime time.Time
}

// abs resolves p as the API does: relative to /home/user.
func abs(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/home/user/" + p
	}
	return path.Clean(p)
}

// roRefusal is what the server says of a change on a read-only mount:
// the sandbox's permission denied, an invalid argument (400).
func roRefusal(p string) string { return "permission denied: " + p }

func parseMode(s string, def fileMode) (fileMode, bool) {
	if s == "" {
		return def, true
	}
	m, err := strconv.ParseUint(s, 8, 32)
	return fileMode(m), err == nil && m <= 0o7777
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, b *sandbox) {
	p := abs(r.URL.Query().Get("path"))
	mode, ok := parseMode(r.URL.Query().Get("mode"), 0o644)
	if !ok {
		fail(w, 400, "invalid_argument", "mode must be octal, e.g. 0644")
		return
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r.Body); err != nil {
		fail(w, 400, "invalid_argument", "read body: "+err.Error())
		return
	}
	s.mu.Lock()
	files, _, key, ro := b.at(p)
	if !ro {
		files[key] = file{data: buf.Bytes(), mode: mode, mtime: time.Now().UTC()}
	}
	s.mu.Unlock()
	if ro {
		fail(w, 400, "invalid_argument", roRefusal(p))
		return
	}
	writeJSON(w, 200, map[string]any{"path": p, "size": buf.Len()})
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request, b *sandbox) {
	p := abs(r.URL.Query().Get("path"))
	if r.URL.Query().Get("list") == "1" {
		s.listDir(w, p, b)
		return
	}
	s.mu.Lock()
	files, _, key, _ := b.at(p)
	f, ok := files[key]
	s.mu.Unlock()
	if !ok {
		fail(w, 404, "not_found", fmt.Sprintf("%s: no such file", p))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.Write(f.data)
}

func (s *Server) listDir(w http.ResponseWriter, dir string, b *sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	files, dirs, key, _ := b.at(dir)
	entries := []client.FileEntry{}
	seen := map[string]bool{}
	add := func(p, typ string, size int64, mode fileMode, mtime time.Time) {
		rest, ok := strings.CutPrefix(p, strings.TrimSuffix(key, "/")+"/")
		if !ok || rest == "" {
			return
		}
		name, deeper, _ := strings.Cut(rest, "/")
		if deeper != "" {
			typ, size, mode = "dir", 0, 0o755
		}
		if seen[name] {
			return
		}
		seen[name] = true
		entries = append(entries, client.FileEntry{Name: name, Path: path.Join(dir, name), Type: typ,
			Size: size, Mode: fmt.Sprintf("%04o", mode), MTime: mtime})
	}
	for p, f := range files {
		add(p, "file", int64(len(f.data)), f.mode, f.mtime)
	}
	for p, m := range dirs {
		add(p, "dir", 0, m, time.Time{})
	}
	slices.SortFunc(entries, func(a, b client.FileEntry) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, 200, map[string]any{"entries": entries})
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request, b *sandbox) {
	p := abs(r.URL.Query().Get("path"))
	recursive := r.URL.Query().Get("recursive") == "1"
	s.mu.Lock()
	defer s.mu.Unlock()
	files, dirs, key, ro := b.at(p)
	if ro {
		fail(w, 400, "invalid_argument", roRefusal(p))
		return
	}
	if _, ok := files[key]; ok {
		delete(files, key)
		w.WriteHeader(204)
		return
	}
	under := func(q string) bool { return strings.HasPrefix(q, strings.TrimSuffix(key, "/")+"/") }
	// A directory is one made with mkdir or one that files were written
	// under.
	_, isDir := dirs[key]
	empty := true
	for q := range files {
		if under(q) {
			isDir, empty = true, false
		}
	}
	for q := range dirs {
		empty = empty && !under(q)
	}
	switch {
	case !isDir:
		fail(w, 404, "not_found", fmt.Sprintf("%s: no such file or directory", p))
		return
	case !empty && !recursive:
		fail(w, 409, "conflict", fmt.Sprintf("%s: directory not empty", p))
		return
	}
	for q := range files {
		if under(q) {
			delete(files, q)
		}
	}
	for q := range dirs {
		if q == key || under(q) {
			delete(dirs, q)
		}
	}
	w.WriteHeader(204)
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Path string `json:"path"`
		Mode string `json:"mode"`
	}
	if !decode(w, r, &req) {
		return
	}
	mode, ok := parseMode(req.Mode, 0o755)
	if !ok || req.Path == "" {
		fail(w, 400, "invalid_argument", "want a path and an octal mode")
		return
	}
	s.mu.Lock()
	_, dirs, key, ro := b.at(abs(req.Path))
	if !ro {
		dirs[key] = mode
	}
	s.mu.Unlock()
	if ro {
		fail(w, 400, "invalid_argument", roRefusal(abs(req.Path)))
		return
	}
	w.WriteHeader(204)
}

func (s *Server) move(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	if !decode(w, r, &req) {
		return
	}
	from, to := abs(req.From), abs(req.To)
	s.mu.Lock()
	defer s.mu.Unlock()
	src, _, fromKey, fromRO := b.at(from)
	dst, _, toKey, toRO := b.at(to)
	f, ok := src[fromKey]
	switch {
	case !ok:
		fail(w, 404, "not_found", fmt.Sprintf("%s: no such file", from))
	case fromRO:
		fail(w, 400, "invalid_argument", roRefusal(from))
	case toRO:
		fail(w, 400, "invalid_argument", roRefusal(to))
	default:
		// Across a mount it is a copy and a remove, as mv does it.
		delete(src, fromKey)
		dst[toKey] = f
		w.WriteHeader(204)
	}
}
