package sandbox_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/store"
)

// memStore is an in-memory store.Store with the semantics the Service
// relies on: copies in and out, filters as documented, Usage over live
// sandboxes.
type memStore struct {
	mu        sync.Mutex
	tenants   map[string]store.Tenant
	keys      map[string]store.Key
	tokens    map[string]store.Token
	sandboxes map[string]store.Sandbox
}

var _ store.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{
		tenants:   map[string]store.Tenant{},
		keys:      map[string]store.Key{},
		tokens:    map[string]store.Token{},
		sandboxes: map[string]store.Sandbox{},
	}
}

func (m *memStore) CreateTenant(_ context.Context, t store.Tenant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.tenants {
		if o.ID == t.ID || o.Name == t.Name {
			return store.ErrConflict
		}
	}
	m.tenants[t.ID] = t
	return nil
}

func (m *memStore) GetTenant(_ context.Context, id string) (store.Tenant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tenants[id]
	if !ok {
		return t, store.ErrNotFound
	}
	return t, nil
}

func (m *memStore) TenantByName(_ context.Context, name string) (store.Tenant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tenants {
		if t.Name == name {
			return t, nil
		}
	}
	return store.Tenant{}, store.ErrNotFound
}

func (m *memStore) ListTenants(context.Context) ([]store.Tenant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.tenants)), nil
}

func (m *memStore) CreateKey(_ context.Context, k store.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[k.ID] = k
	return nil
}

func (m *memStore) KeyByHash(_ context.Context, h []byte) (store.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if bytes.Equal(k.Hash, h) {
			return k, nil
		}
	}
	return store.Key{}, store.ErrNotFound
}

func (m *memStore) ListKeys(_ context.Context, tenantID string) ([]store.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var l []store.Key
	for _, k := range m.keys {
		if tenantID == "" || k.TenantID == tenantID {
			l = append(l, k)
		}
	}
	return l, nil
}

func (m *memStore) DeleteKey(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, id)
	return nil
}

func (m *memStore) CreateToken(_ context.Context, t store.Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[t.ID] = t
	return nil
}

func (m *memStore) TokenByHash(_ context.Context, h []byte) (store.Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tokens {
		if bytes.Equal(t.Hash, h) {
			return t, nil
		}
	}
	return store.Token{}, store.ErrNotFound
}

func (m *memStore) DeleteTokens(_ context.Context, sandboxID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range m.tokens {
		if t.SandboxID == sandboxID {
			delete(m.tokens, id)
		}
	}
	return nil
}

func (m *memStore) CreateSandbox(_ context.Context, s store.Sandbox) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sandboxes[s.ID]; ok {
		return store.ErrConflict
	}
	m.sandboxes[s.ID] = clone(s)
	return nil
}

func (m *memStore) GetSandbox(_ context.Context, id string) (store.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sandboxes[id]
	if !ok {
		return s, store.ErrNotFound
	}
	return clone(s), nil
}

func (m *memStore) UpdateSandbox(_ context.Context, s store.Sandbox) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sandboxes[s.ID]; !ok {
		return store.ErrNotFound
	}
	m.sandboxes[s.ID] = clone(s)
	return nil
}

func (m *memStore) ListSandboxes(_ context.Context, f store.SandboxFilter) ([]store.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var l []store.Sandbox
	for _, s := range m.sandboxes {
		if f.TenantID != "" && s.TenantID != f.TenantID || f.State != "" && s.State != f.State || f.After != "" && s.ID <= f.After {
			continue
		}
		if !hasAll(s.Metadata, f.Metadata) {
			continue
		}
		l = append(l, clone(s))
	}
	slices.SortFunc(l, func(a, b store.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	if f.Limit > 0 && len(l) > f.Limit {
		l = l[:f.Limit]
	}
	return l, nil
}

func (m *memStore) Usage(_ context.Context, tenantID string) (int, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int
	var mem int64
	for _, s := range m.sandboxes {
		if s.TenantID == tenantID && (s.State == store.StateCreating || s.State == store.StateRunning) {
			n++
			mem += s.MemoryMB
		}
	}
	return n, mem, nil
}

func (m *memStore) Close() error { return nil }

// put replaces a record behind the Service's back, for restart tests.
func (m *memStore) put(s store.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sandboxes[s.ID] = clone(s)
}

func hasAll(md, want map[string]string) bool {
	for k, v := range want {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func clone(s store.Sandbox) store.Sandbox {
	s.Env, s.Metadata = maps.Clone(s.Env), maps.Clone(s.Metadata)
	return s
}
