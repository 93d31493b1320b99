package sqlite

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
)

// CreateSecret inserts sec; an existing (tenant, name) is ErrConflict.
func (s *Store) CreateSecret(ctx context.Context, sec store.Secret) error {
	hosts, err := store.EncodeHosts(sec.Hosts)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO secrets (`+store.SecretCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sec.TenantID, sec.Name, hosts, sec.Inject, sec.Body, sec.Sealed,
			store.ToNanos(sec.CreatedAt), store.ToNanos(sec.RotatedAt))
	}
	if err != nil {
		return fmt.Errorf("create secret %q of tenant %s: %w", sec.Name, sec.TenantID, err)
	}
	return nil
}

// GetSecret returns the tenant's secret with the name.
func (s *Store) GetSecret(ctx context.Context, tenantID, name string) (store.Secret, error) {
	sec, err := store.ScanSecret(s.queryRow(ctx, `SELECT `+store.SecretCols+` FROM secrets
		WHERE tenant_id = ? AND name = ?`, tenantID, name))
	if err != nil {
		return store.Secret{}, fmt.Errorf("get secret %q of tenant %s: %w", name, tenantID, err)
	}
	return sec, nil
}

// ListSecrets returns the tenant's secrets ordered by name.
func (s *Store) ListSecrets(ctx context.Context, tenantID string) ([]store.Secret, error) {
	rows, err := s.query(ctx, `SELECT `+store.SecretCols+` FROM secrets
		WHERE tenant_id = ? ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list secrets of tenant %s: %w", tenantID, err)
	}
	out, err := scanAll(rows, store.ScanSecret)
	if err != nil {
		return nil, fmt.Errorf("list secrets of tenant %s: %w", tenantID, err)
	}
	return out, nil
}

// UpdateSecret replaces everything but the key and created_at.
func (s *Store) UpdateSecret(ctx context.Context, sec store.Secret) error {
	hosts, err := store.EncodeHosts(sec.Hosts)
	if err == nil {
		var n int64
		n, err = s.exec(ctx, `UPDATE secrets SET hosts = ?, inject = ?, body = ?, sealed = ?, rotated_at = ?
			WHERE tenant_id = ? AND name = ?`,
			hosts, sec.Inject, sec.Body, sec.Sealed, store.ToNanos(sec.RotatedAt), sec.TenantID, sec.Name)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("update secret %q of tenant %s: %w", sec.Name, sec.TenantID, err)
	}
	return nil
}

// DeleteSecret removes the tenant's secret with the name.
func (s *Store) DeleteSecret(ctx context.Context, tenantID, name string) error {
	n, err := s.exec(ctx, `DELETE FROM secrets WHERE tenant_id = ? AND name = ?`, tenantID, name)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete secret %q of tenant %s: %w", name, tenantID, err)
	}
	return nil
}
