package clienttest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// maxPaused is the server's default max_paused_s.
const maxPaused = 7 * 24 * time.Hour

// snapshot is a snapshot's files, as the sandbox had them.
type snapshot struct {
	client.Snapshot
	files map[string]file
	dirs  map[string]fileMode
}

func cloneFiles(files map[string]file, dirs map[string]fileMode) (map[string]file, map[string]fileMode) {
	return maps.Clone(files), maps.Clone(dirs)
}

// pause freezes the sandbox as the server does: its lifetime clock stops
// (ExpiresAt becomes the end of its max_paused_s); pausing a paused one
// changes nothing.
func (s *Server) pause(w http.ResponseWriter, r *http.Request, b *sandbox) {
	s.mu.Lock()
	if b.State == client.StateRunning {
		now := time.Now().UTC().Truncate(time.Second)
		b.lifeLeft = max(b.ExpiresAt.Sub(now), 0)
		b.State, b.PausedAt = client.StatePaused, now
		b.ExpiresAt = now.Add(time.Duration(b.MaxPausedS) * time.Second)
	}
	sb := b.Sandbox
	s.mu.Unlock()
	writeJSON(w, 200, wire(sb))
}

// resume thaws it with what was left of its lifetime; resuming a
// running one changes nothing.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, b *sandbox) {
	s.mu.Lock()
	s.resumeLocked(b)
	sb := b.Sandbox
	s.mu.Unlock()
	writeJSON(w, 200, wire(sb))
}

func (s *Server) resumeLocked(b *sandbox) {
	if b.State != client.StatePaused {
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	b.State, b.PausedAt, b.ExpiresAt = client.StateRunning, time.Time{}, now.Add(b.lifeLeft)
}

// awake lets a call that needs the sandbox running through: a paused
// sandbox made with auto_resume is resumed first, any other refused with
// 409 paused.
func (s *Server) awake(h func(http.ResponseWriter, *http.Request, *sandbox)) func(http.ResponseWriter, *http.Request, *sandbox) {
	return func(w http.ResponseWriter, r *http.Request, b *sandbox) {
		s.mu.Lock()
		paused := b.State == client.StatePaused
		if paused && b.AutoResume {
			s.resumeLocked(b)
			paused = false
		}
		s.mu.Unlock()
		if paused {
			fail(w, 409, "paused", fmt.Sprintf("sandbox %s is paused: resume it first (POST /v1/sandboxes/%s/resume), or create it with auto_resume", b.ID, b.ID))
			return
		}
		h(w, r, b)
	}
}

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Name string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Name == "" {
		s.seq++
		req.Name = fmt.Sprintf("snap-%04d", s.seq)
	}
	if strings.ContainsAny(req.Name, "/: ") {
		fail(w, 400, "invalid_argument", fmt.Sprintf("snapshot name %s: want letters, digits, '.', '_' and '-'", req.Name))
		return
	}
	if s.snapshots[req.Name] != nil {
		fail(w, 409, "conflict", fmt.Sprintf("snapshot %s exists", req.Name))
		return
	}
	files, dirs := cloneFiles(b.files, b.dirs)
	snap := &snapshot{Snapshot: client.Snapshot{Name: req.Name, Sandbox: b.ID, Template: b.Template, Node: "local",
		CreatedAt: time.Now().UTC().Truncate(time.Second)}, files: files, dirs: dirs}
	for _, f := range files {
		snap.SizeBytes += int64(len(f.data))
	}
	s.snapshots[req.Name] = snap
	w.Header().Set("Location", "/v1/snapshots/"+req.Name)
	writeJSON(w, 201, snap.Snapshot)
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := []client.Snapshot{}
	for _, snap := range s.snapshots {
		out = append(out, snap.Snapshot)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b client.Snapshot) int { return a.CreatedAt.Compare(b.CreatedAt) })
	writeJSON(w, 200, map[string]any{"snapshots": out})
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	snap := s.snapshots[r.PathValue("name")]
	s.mu.Unlock()
	if snap == nil {
		fail(w, 404, "not_found", "snapshot "+r.PathValue("name"))
		return
	}
	writeJSON(w, 200, snap.Snapshot)
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	_, ok := s.snapshots[name]
	delete(s.snapshots, name)
	s.mu.Unlock()
	if !ok {
		fail(w, 404, "not_found", "snapshot "+name)
		return
	}
	w.WriteHeader(204)
}

// fork makes count sandboxes with the sandbox's files and template (not
// its processes, as the server's forks).
func (s *Server) fork(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Count int `json:"count"`
		createRequest
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Count < 1 || req.Count > 50 {
		fail(w, 400, "invalid_argument", fmt.Sprintf("count %d must be between 1 and 50", req.Count))
		return
	}
	if req.Template != "" || req.Snapshot != "" {
		fail(w, 400, "invalid_argument", "a fork has its parent's template and files: template, snapshot and build cannot be set")
		return
	}
	s.mu.Lock()
	req.Template = b.Template
	files, dirs := cloneFiles(b.files, b.dirs)
	s.mu.Unlock()
	out := []client.Sandbox{}
	for range req.Count {
		f, dirsCopy := cloneFiles(files, dirs)
		sb, ok := s.newSandbox(w, req.createRequest, f, dirsCopy)
		if !ok {
			return
		}
		s.mu.Lock()
		s.sandboxes[sb.ID].ForkOf = b.ID
		sb = s.sandboxes[sb.ID].Sandbox
		s.mu.Unlock()
		out = append(out, sb)
	}
	writeJSON(w, 201, map[string]any{"sandboxes": wireAll(out)})
}
