package api

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/airlockhq/airlock/internal/store"
)

// fakeStore keeps tenants, keys and tokens in memory. Sandboxes are the
// fake manager's, so those methods are not used by the API.
type fakeStore struct {
	mu      sync.Mutex
	tenants map[string]store.Tenant
	keys    map[string]store.Key
	tokens  map[string]store.Token
}

func newFakeStore() *fakeStore {
	return &fakeStore{tenants: map[string]store.Tenant{}, keys: map[string]store.Key{}, tokens: map[string]store.Token{}}
}

var errUnused = errors.New("not used by the api")

func (s *fakeStore) CreateTenant(_ context.Context, t store.Tenant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.tenants {
		if o.Name == t.Name {
			return store.ErrConflict
		}
	}
	s.tenants[t.ID] = t
	return nil
}

func (s *fakeStore) GetTenant(_ context.Context, id string) (store.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tenants[id]
	if !ok {
		return t, store.ErrNotFound
	}
	return t, nil
}

func (s *fakeStore) TenantByName(_ context.Context, name string) (store.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tenants {
		if t.Name == name {
			return t, nil
		}
	}
	return store.Tenant{}, store.ErrNotFound
}

func (s *fakeStore) ListTenants(context.Context) ([]store.Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Tenant
	for _, t := range s.tenants {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *fakeStore) CreateKey(_ context.Context, k store.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[k.ID] = k
	return nil
}

func (s *fakeStore) KeyByHash(_ context.Context, hash []byte) (store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if string(k.Hash) == string(hash) {
			return k, nil
		}
	}
	return store.Key{}, store.ErrNotFound
}

func (s *fakeStore) ListKeys(_ context.Context, tenantID string) ([]store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Key
	for _, k := range s.keys {
		if tenantID == "" || k.TenantID == tenantID {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *fakeStore) DeleteKey(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[id]; !ok {
		return store.ErrNotFound
	}
	delete(s.keys, id)
	return nil
}

func (s *fakeStore) CreateToken(_ context.Context, t store.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t.ID] = t
	return nil
}

func (s *fakeStore) TokenByHash(_ context.Context, hash []byte) (store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		if string(t.Hash) == string(hash) {
			return t, nil
		}
	}
	return store.Token{}, store.ErrNotFound
}

func (s *fakeStore) DeleteTokens(context.Context, string) error         { return errUnused }
func (s *fakeStore) CreateSandbox(context.Context, store.Sandbox) error { return errUnused }
func (s *fakeStore) UpdateSandbox(context.Context, store.Sandbox) error { return errUnused }
func (s *fakeStore) Usage(context.Context, string) (int, int64, error)  { return 0, 0, errUnused }
func (s *fakeStore) Close() error                                       { return nil }
func (s *fakeStore) GetSandbox(context.Context, string) (store.Sandbox, error) {
	return store.Sandbox{}, errUnused
}
func (s *fakeStore) ListSandboxes(context.Context, store.SandboxFilter) ([]store.Sandbox, error) {
	return nil, errUnused
}
