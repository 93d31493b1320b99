package api

import (
	"context"
	"fmt"
	"sort"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
)

// The fake keeps secrets per tenant, validated like the service does.

func (m *fakeManager) CreateSecret(_ context.Context, c sandbox.Caller, spec secrets.Spec) (sandbox.SecretInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if spec.Value == "" {
		return sandbox.SecretInfo{}, fmt.Errorf("%w: field \"value\" is required", sandbox.ErrInvalid)
	}
	if err := spec.Validate(); err != nil {
		return sandbox.SecretInfo{}, fmt.Errorf("%w: %v", sandbox.ErrInvalid, err)
	}
	if m.secrets == nil {
		m.secrets = map[string]map[string]secrets.Spec{}
	}
	if m.secrets[c.TenantID] == nil {
		m.secrets[c.TenantID] = map[string]secrets.Spec{}
	}
	if _, ok := m.secrets[c.TenantID][spec.Name]; ok {
		return sandbox.SecretInfo{}, fmt.Errorf("%w: secret %q exists", sandbox.ErrConflict, spec.Name)
	}
	m.secrets[c.TenantID][spec.Name] = spec
	return fakeInfo(spec), nil
}

func (m *fakeManager) ListSecrets(_ context.Context, c sandbox.Caller) ([]sandbox.SecretInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []sandbox.SecretInfo{}
	for _, sp := range m.secrets[c.TenantID] {
		out = append(out, fakeInfo(sp))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *fakeManager) RotateSecret(_ context.Context, c sandbox.Caller, name string, req sandbox.RotateRequest) (sandbox.SecretInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp, ok := m.secrets[c.TenantID][name]
	if !ok {
		return sandbox.SecretInfo{}, fmt.Errorf("%w: secret %q", sandbox.ErrNotFound, name)
	}
	sp.Value = req.Value
	if req.Hosts != nil {
		sp.Hosts = req.Hosts
	}
	if err := sp.Validate(); err != nil {
		return sandbox.SecretInfo{}, fmt.Errorf("%w: %v", sandbox.ErrInvalid, err)
	}
	m.secrets[c.TenantID][name] = sp
	return fakeInfo(sp), nil
}

func (m *fakeManager) DeleteSecret(_ context.Context, c sandbox.Caller, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.secrets[c.TenantID][name]; !ok {
		return fmt.Errorf("%w: secret %q", sandbox.ErrNotFound, name)
	}
	delete(m.secrets[c.TenantID], name)
	return nil
}

func fakeInfo(sp secrets.Spec) sandbox.SecretInfo {
	return sandbox.SecretInfo{Name: sp.Name, Hosts: sp.Hosts, Inject: sp.Inject, Body: sp.Body, CreatedAt: t0}
}
