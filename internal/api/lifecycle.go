package api

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// Pause and resume, snapshots and forks (the sandbox package's
// pause.go, snapshots.go and fork.go say what each does).

func (s *server) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := s.m.Pause(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(sb))
}

func (s *server) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := s.m.Resume(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(sb))
}

func (s *server) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, true); err != nil {
		s.fail(w, r, err)
		return
	}
	snap, err := s.m.CreateSnapshot(r.Context(), callerOf(r), r.PathValue("id"), req.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/snapshots/"+snap.Name)
	writeJSON(w, http.StatusCreated, snap)
}

func (s *server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.Snapshots(r.Context(), callerOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Snapshots []sandbox.Snapshot `json:"snapshots"`
	}{list})
}

func (s *server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := s.m.GetSnapshot(r.Context(), callerOf(r), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

func (s *server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteSnapshot(r.Context(), callerOf(r), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) forkSandbox(w http.ResponseWriter, r *http.Request) {
	var req sandbox.ForkRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := validateCreate(&req.CreateRequest); err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.m.Fork(r.Context(), callerOf(r), r.PathValue("id"), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Sandboxes []sandboxJSON `json:"sandboxes"`
	}{make([]sandboxJSON, 0, len(list))}
	for _, sb := range list {
		out.Sandboxes = append(out.Sandboxes, toJSON(sb))
	}
	writeJSON(w, http.StatusCreated, out)
}

// lifecycleJSON is a sandbox's pause settings and origins, as the API
// shows them.
func lifecycleJSON(sb sandboxrec.Sandbox) *sandbox.Lifecycle {
	l := sandbox.LifecycleOf(sb)
	if !l.PausedAt.IsZero() {
		l.PausedAt = l.PausedAt.UTC()
	}
	return &l
}

func (s *server) createVolume(w http.ResponseWriter, r *http.Request) {
	var req sandbox.VolumeRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.m.CreateVolume(r.Context(), callerOf(r), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/volumes/"+v.Name)
	writeJSON(w, http.StatusCreated, v)
}

func (s *server) listVolumes(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.Volumes(r.Context(), callerOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Volumes []sandbox.Volume `json:"volumes"`
	}{list})
}

func (s *server) getVolume(w http.ResponseWriter, r *http.Request) {
	v, err := s.m.GetVolume(r.Context(), callerOf(r), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	if err := s.m.DeleteVolume(r.Context(), callerOf(r), r.PathValue("name")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
