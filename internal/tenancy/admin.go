package tenancy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// The administration of tenants and keys. Store errors come back as the
// store returned them (ErrNotFound, ErrConflict...), unwrapped: the API
// maps them, and shows a mapped error's text to the client.

// CreateTenant records t as a new tenant, with a new ID and its creation
// time; a taken name is an error of kind errdefs.ErrConflict.
func (s *Service) CreateTenant(ctx context.Context, t Tenant) (Tenant, error) {
	t.ID = newID("ten_")
	t.CreatedAt = s.now().UTC().Truncate(time.Second)
	if err := s.st.CreateTenant(ctx, t); err != nil {
		return Tenant{}, err
	}
	return t, nil
}

// GetTenant returns the tenant with id.
func (s *Service) GetTenant(ctx context.Context, id string) (Tenant, error) {
	return s.st.GetTenant(ctx, id)
}

// ListTenants returns every tenant.
func (s *Service) ListTenants(ctx context.Context) ([]Tenant, error) {
	return s.st.ListTenants(ctx)
}

// Quotas are the quotas to change on a tenant; nil leaves one as it is.
type Quotas struct {
	MaxSandboxes *int
	MaxMemoryMB  *int64
	MaxStorageMB *int64
}

// UpdateTenantQuota changes the quotas q gives on the tenant named name
// (ErrTenantNotFound if there is none) and returns the tenant as stored.
func (s *Service) UpdateTenantQuota(ctx context.Context, name string, q Quotas) (Tenant, error) {
	t, err := s.tenantByName(ctx, name)
	if err != nil {
		return Tenant{}, err
	}
	if q.MaxSandboxes != nil {
		t.MaxSandboxes = *q.MaxSandboxes
	}
	if q.MaxMemoryMB != nil {
		t.MaxMemoryMB = *q.MaxMemoryMB
	}
	if q.MaxStorageMB != nil {
		t.MaxStorageMB = *q.MaxStorageMB
	}
	return s.st.UpdateTenantQuota(ctx, t)
}

func (s *Service) tenantByName(ctx context.Context, name string) (Tenant, error) {
	t, err := s.st.TenantByName(ctx, name)
	if errors.Is(err, errdefs.ErrNotFound) {
		err = fmt.Errorf("tenant %q: %w", name, ErrTenantNotFound)
	}
	return t, err
}

// CreatedKey is a key just made: the only time its plaintext is known.
type CreatedKey struct {
	Key       Key
	Plaintext string
	Tenant    Tenant
}

// CreateKey makes a new (not admin) API key named name for the tenant
// named tenant (ErrTenantNotFound if there is none).
func (s *Service) CreateKey(ctx context.Context, tenant, name string) (CreatedKey, error) {
	t, err := s.tenantByName(ctx, tenant)
	if err != nil {
		return CreatedKey{}, err
	}
	plain, hash := NewKey()
	k := Key{ID: newID("key_"), TenantID: t.ID, Name: name, Hash: hash,
		CreatedAt: s.now().UTC().Truncate(time.Second)}
	if err := s.st.CreateKey(ctx, k); err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{Key: k, Plaintext: plain, Tenant: t}, nil
}

// KeyInfo is a key in a listing, with its tenant's name; never its hash.
type KeyInfo struct {
	ID        string
	Tenant    string // the tenant's name; "" if the tenant is gone
	Name      string
	Admin     bool
	CreatedAt time.Time
}

// ListKeys lists the keys of the tenant tenantID, or of every tenant if
// tenantID is "".
func (s *Service) ListKeys(ctx context.Context, tenantID string) ([]KeyInfo, error) {
	keys, err := s.st.ListKeys(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	out := make([]KeyInfo, 0, len(keys))
	for _, k := range keys {
		name, ok := names[k.TenantID]
		if !ok {
			t, err := s.st.GetTenant(ctx, k.TenantID)
			if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return nil, err
			}
			name, names[k.TenantID] = t.Name, t.Name
		}
		out = append(out, KeyInfo{k.ID, name, k.Name, k.Admin, k.CreatedAt.UTC()})
	}
	return out, nil
}

// DeleteKey deletes the key with id, which stops working here at once:
// it leaves the key cache whether or not the store said it was deleted,
// as the delete may have happened all the same.
func (s *Service) DeleteKey(ctx context.Context, id string) error {
	err := s.st.DeleteKey(ctx, id)
	s.keys.drop(id)
	return err
}
