package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

const maxTokenTTL = 86400

func (s *server) createToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TTLS int64 `json:"ttl_s"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.TTLS < 1 || req.TTLS > maxTokenTTL {
		s.fail(w, r, invalidf("field \"ttl_s\" is %d; want 1 to %d", req.TTLS, maxTokenTTL))
		return
	}
	c := callerOf(r)
	// The manager answers not_found for a sandbox the caller does not own.
	sb, err := s.m.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	plain, t, err := s.tenancy.MintToken(r.Context(), sb.ID, sb.TenantID, time.Duration(req.TTLS)*time.Second)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}{plain, t.ExpiresAt})
}

// validName bounds tenant and key names: they show up in logs and
// listings, so no control characters or surprises. 1 to 64 of letters,
// digits, '.', '_' and '-', a letter or digit first.
func validName(s string) bool {
	return len(s) <= 64 && idChars(s) && s[0] != '.' && s[0] != '_' && s[0] != '-'
}

// idChars says s is not empty and all letters, digits, '.', '_' or '-'.
// Checked in a loop, not with a regexp: `{0,63}` compiles to 64 copies of
// its class, and such regexps cost every start of the airlock binary
// (GODEBUG=inittrace=1), the CLI's and each `airlock run` included.
func idChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *server) createTenant(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name         string `json:"name"`
		MaxSandboxes int    `json:"max_sandboxes"`
		MaxMemoryMB  int64  `json:"max_memory_mb"`
		MaxStorageMB *int64 `json:"max_storage_mb"` // absent: the default
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if !validName(req.Name) {
		s.fail(w, r, invalidf("field \"name\" %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", req.Name))
		return
	}
	if req.MaxStorageMB == nil {
		req.MaxStorageMB = new(int64(store.DefaultMaxStorageMB))
	}
	if err := checkQuotas(&req.MaxSandboxes, &req.MaxMemoryMB, req.MaxStorageMB); err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.tenancy.CreateTenant(r.Context(), tenancy.Tenant{Name: req.Name, MaxSandboxes: req.MaxSandboxes,
		MaxMemoryMB: req.MaxMemoryMB, MaxStorageMB: *req.MaxStorageMB})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			err = errf(http.StatusConflict, codeConflict, "tenant %q already exists", req.Name)
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

// updateTenant is PATCH /v1/tenants/{name}: it changes the quotas given
// and leaves the others. Sandboxes already running stay; new ones count
// against the new quotas.
func (s *server) updateTenant(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxSandboxes *int   `json:"max_sandboxes"`
		MaxMemoryMB  *int64 `json:"max_memory_mb"`
		MaxStorageMB *int64 `json:"max_storage_mb"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.MaxSandboxes == nil && req.MaxMemoryMB == nil && req.MaxStorageMB == nil {
		s.fail(w, r, invalidf("give one or more of \"max_sandboxes\", \"max_memory_mb\" and \"max_storage_mb\""))
		return
	}
	if err := checkQuotas(req.MaxSandboxes, req.MaxMemoryMB, req.MaxStorageMB); err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	t, err := s.tenancy.UpdateTenantQuota(r.Context(), name, tenancy.Quotas{
		MaxSandboxes: req.MaxSandboxes, MaxMemoryMB: req.MaxMemoryMB, MaxStorageMB: req.MaxStorageMB})
	if errors.Is(err, tenancy.ErrTenantNotFound) {
		err = errf(http.StatusNotFound, codeNotFound, "tenant %q not found", name)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.m.ForgetTenant(t.ID)
	writeJSON(w, http.StatusOK, t)
}

// checkQuotas refuses a negative quota among those given (nil: not given).
func checkQuotas(maxSandboxes *int, maxMemoryMB, maxStorageMB *int64) error {
	switch {
	case maxSandboxes != nil && *maxSandboxes < 0:
		return invalidf("field \"max_sandboxes\" is %d; want 0 (unlimited) or more", *maxSandboxes)
	case maxMemoryMB != nil && *maxMemoryMB < 0:
		return invalidf("field \"max_memory_mb\" is %d; want 0 (unlimited) or more", *maxMemoryMB)
	case maxStorageMB != nil && *maxStorageMB < 0:
		return invalidf("field \"max_storage_mb\" is %d; want 0 (unlimited) or more", *maxStorageMB)
	case maxStorageMB != nil && *maxStorageMB > maxStorageQuotaMB:
		return invalidf("field \"max_storage_mb\" is %d; want at most %d (1 EiB), or 0 for unlimited", *maxStorageMB, maxStorageQuotaMB)
	}
	return nil
}

// maxStorageQuotaMB keeps a storage quota, counted in bytes, within an
// int64.
const maxStorageQuotaMB = 1 << 40

func (s *server) listTenants(w http.ResponseWriter, r *http.Request) {
	ts, err := s.tenancy.ListTenants(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ts == nil {
		ts = []tenancy.Tenant{}
	}
	writeJSON(w, http.StatusOK, struct {
		Tenants []tenancy.Tenant `json:"tenants"`
	}{ts})
}

// keyJSON is a key in a listing: never its hash.
type keyJSON struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *server) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tenant string `json:"tenant"`
		Name   string `json:"name"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Tenant == "" {
		s.fail(w, r, invalidf("field \"tenant\" (a tenant name) is required"))
		return
	}
	if req.Name != "" && !validName(req.Name) {
		s.fail(w, r, invalidf("field \"name\" %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", req.Name))
		return
	}
	k, err := s.tenancy.CreateKey(r.Context(), req.Tenant, req.Name)
	if err != nil {
		if errors.Is(err, tenancy.ErrTenantNotFound) {
			err = errf(http.StatusNotFound, codeNotFound, "tenant %q not found", req.Tenant)
		}
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		ID     string `json:"id"`
		Key    string `json:"key"`
		Tenant string `json:"tenant"`
		Name   string `json:"name"`
	}{k.Key.ID, k.Plaintext, k.Tenant.Name, k.Key.Name})
}

func (s *server) listKeys(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	tenantID := c.TenantID
	if c.Admin {
		tenantID = ""
	}
	keys, err := s.tenancy.ListKeys(r.Context(), tenantID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Keys []keyJSON `json:"keys"`
	}{make([]keyJSON, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyJSON(k))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) deleteKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// The key stops working here at once: tenancy drops it from its cache.
	if err := s.tenancy.DeleteKey(r.Context(), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = errf(http.StatusNotFound, codeNotFound, "key %q not found", id)
		}
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
