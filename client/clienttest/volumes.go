package clienttest

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// volume is a volume's files and who mounts it: the sandboxes by id,
// true for a read-write mount.
type volume struct {
	client.Volume
	files map[string]file // by clean absolute path inside the volume
	dirs  map[string]fileMode
	users map[string]bool
}

// mount is where a sandbox mounts a volume.
type mount struct {
	path     string
	vol      *volume
	readOnly bool
}

func (s *Server) createVolume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string `json:"name"`
		SizeMB int64  `json:"size_mb"`
		Node   string `json:"node"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.Name == "" || len(req.Name) > 63 || strings.ContainsAny(req.Name, "/: ") {
		fail(w, 400, "invalid_argument", fmt.Sprintf("volume name %q: want 1-63 of letters, digits, '.', '_' and '-'", req.Name))
		return
	}
	if req.SizeMB < 16 || req.SizeMB > 1<<20 {
		fail(w, 400, "invalid_argument", fmt.Sprintf("size_mb %d: want 16 to %d", req.SizeMB, 1<<20))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.volumes[req.Name] != nil {
		fail(w, 409, "conflict", fmt.Sprintf("volume %s exists", req.Name))
		return
	}
	v := &volume{Volume: client.Volume{Name: req.Name, SizeMB: req.SizeMB, Node: or(req.Node, "local"), CreatedAt: time.Now().UTC().Truncate(time.Second)},
		files: map[string]file{}, dirs: map[string]fileMode{}, users: map[string]bool{}}
	s.volumes[req.Name] = v
	w.Header().Set("Location", "/v1/volumes/"+req.Name)
	writeJSON(w, 201, v.Volume)
}

func (s *Server) listVolumes(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := []client.Volume{}
	for _, v := range s.volumes {
		out = append(out, v.Volume)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b client.Volume) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, 200, map[string]any{"volumes": out})
}

func (s *Server) getVolume(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	v := s.volumes[r.PathValue("name")]
	s.mu.Unlock()
	if v == nil {
		fail(w, 404, "not_found", "volume "+r.PathValue("name"))
		return
	}
	writeJSON(w, 200, v.Volume)
}

func (s *Server) deleteVolume(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.volumes[name]
	switch {
	case v == nil:
		fail(w, 404, "not_found", "volume "+name)
	case len(v.users) > 0:
		ids := make([]string, 0, len(v.users))
		for id := range v.users {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		fail(w, 409, "conflict", fmt.Sprintf("volume %s is mounted by %s: delete those sandboxes first", name, strings.Join(ids, ", ")))
	default:
		delete(s.volumes, name)
		w.WriteHeader(204)
	}
}

// mountLocked checks a create's volumes as the server does and mounts
// them for sandbox id: one read-write mount at a time, or any number of
// read-only ones.
func (s *Server) mountLocked(id string, vms []client.VolumeMount) ([]mount, int, string) {
	if len(vms) > 8 {
		return nil, 400, "volumes: at most 8 per sandbox"
	}
	var out []mount
	seen := map[string]bool{}
	for i, vm := range vms {
		p := path.Clean(vm.Path)
		if !path.IsAbs(vm.Path) || p == "/" || p == "/tmp" || p == "/home/user" || strings.HasPrefix(p, "/proc") || strings.HasPrefix(p, "/usr") {
			return nil, 400, fmt.Sprintf("volumes[%d].path: %s: a volume cannot go there", i, vm.Path)
		}
		if seen["name:"+vm.Name] || seen["path:"+p] {
			return nil, 400, fmt.Sprintf("volumes[%d]: volume %s or path %s given twice", i, vm.Name, vm.Path)
		}
		seen["name:"+vm.Name], seen["path:"+p] = true, true
		v := s.volumes[vm.Name]
		if v == nil {
			return nil, 404, fmt.Sprintf("volumes[%d]: volume %s not found", i, vm.Name)
		}
		for _, rw := range v.users {
			if rw || !vm.ReadOnly {
				return nil, 409, fmt.Sprintf("volume %s is mounted read-write by another sandbox (one read-write mount at a time, or many read-only)", vm.Name)
			}
		}
		out = append(out, mount{path: p, vol: v, readOnly: vm.ReadOnly})
	}
	for _, m := range out {
		m.vol.users[id] = !m.readOnly
	}
	return out, 0, ""
}

// unmountLocked lets go of a sandbox's volumes (it was deleted).
func (s *Server) unmountLocked(b *sandbox) {
	for _, m := range b.mounts {
		delete(m.vol.users, b.ID)
	}
	b.mounts = nil
}

// at is where path p of sandbox b lives: in a volume it mounts (ro for a
// read-only one), else in the sandbox's own files; key is p there.
func (b *sandbox) at(p string) (files map[string]file, dirs map[string]fileMode, key string, ro bool) {
	for _, m := range b.mounts {
		if p == m.path || strings.HasPrefix(p, m.path+"/") {
			return m.vol.files, m.vol.dirs, "/" + strings.TrimPrefix(strings.TrimPrefix(p, m.path), "/"), m.readOnly
		}
	}
	return b.files, b.dirs, p, false
}
