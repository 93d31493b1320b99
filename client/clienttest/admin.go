package clienttest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) {
	var req client.TenantRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Name == "" {
		fail(w, 400, "invalid_argument", "a tenant needs a name")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.tenants, func(t client.Tenant) bool { return t.Name == req.Name }) {
		fail(w, 409, "conflict", fmt.Sprintf("tenant %q exists", req.Name))
		return
	}
	s.seq++
	t := client.Tenant{ID: fmt.Sprintf("ten-%04d", s.seq), Name: req.Name, MaxSandboxes: req.MaxSandboxes,
		MaxMemoryMB: req.MaxMemoryMB, MaxStorageMB: 2048, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if req.MaxStorageMB != nil {
		t.MaxStorageMB = *req.MaxStorageMB
	}
	s.tenants = append(s.tenants, t)
	writeJSON(w, 201, t)
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) {
	var req client.TenantQuota
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.tenants, func(t client.Tenant) bool { return t.Name == r.PathValue("name") })
	if i < 0 {
		fail(w, 404, "not_found", fmt.Sprintf("tenant %q not found", r.PathValue("name")))
		return
	}
	if req.MaxSandboxes != nil {
		s.tenants[i].MaxSandboxes = *req.MaxSandboxes
	}
	if req.MaxMemoryMB != nil {
		s.tenants[i].MaxMemoryMB = *req.MaxMemoryMB
	}
	if req.MaxStorageMB != nil {
		s.tenants[i].MaxStorageMB = *req.MaxStorageMB
	}
	writeJSON(w, 200, s.tenants[i])
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tenant string `json:"tenant"`
		Name   string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.ContainsFunc(s.tenants, func(t client.Tenant) bool { return t.Name == req.Tenant }) {
		fail(w, 404, "not_found", fmt.Sprintf("tenant %q not found", req.Tenant))
		return
	}
	s.seq++
	k := client.Key{ID: fmt.Sprintf("key-%04d", s.seq), Tenant: req.Tenant, Name: req.Name, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	secret := fmt.Sprintf("alk_%s_%d", req.Tenant, s.seq)
	s.keys[secret] = &key{Key: k}
	writeJSON(w, 201, client.NewKey{ID: k.ID, Key: secret, Tenant: k.Tenant, Name: k.Name})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	me := s.keys[cred]
	keys := []keyJSON{}
	for _, k := range s.keys {
		if me.admin || k.Tenant == me.Tenant {
			keys = append(keys, keyJSON{k.Key, k.admin})
		}
	}
	slices.SortFunc(keys, func(a, b keyJSON) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(w, 200, map[string]any{"keys": keys})
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for secret, k := range s.keys {
		if k.ID == r.PathValue("id") {
			delete(s.keys, secret)
			w.WriteHeader(204)
			return
		}
	}
	fail(w, 404, "not_found", fmt.Sprintf("key %s not found", r.PathValue("id")))
}
