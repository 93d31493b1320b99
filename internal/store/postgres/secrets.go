package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/airlockhq/airlock/internal/store"
)

const secretCols = `tenant_id, name, hosts, inject, body, sealed, created_at, rotated_at`

// CreateSecret inserts sec; an existing (tenant, name) is ErrConflict.
func (s *Store) CreateSecret(ctx context.Context, sec store.Secret) error {
	hosts, err := encodeHosts(sec.Hosts)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO secrets (`+secretCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			sec.TenantID, sec.Name, hosts, sec.Inject, sec.Body, bytesOf(sec.Sealed),
			toNanos(sec.CreatedAt), toNanos(sec.RotatedAt))
	}
	if err != nil {
		return fmt.Errorf("create secret %q of tenant %s: %w", sec.Name, sec.TenantID, err)
	}
	return nil
}

// GetSecret returns the tenant's secret with the name.
func (s *Store) GetSecret(ctx context.Context, tenantID, name string) (store.Secret, error) {
	sec, err := scanSecret(s.pool.QueryRow(ctx, `SELECT `+secretCols+` FROM secrets
		WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return store.Secret{}, fmt.Errorf("get secret %q of tenant %s: %w", name, tenantID, err)
	}
	return sec, nil
}

// ListSecrets returns the tenant's secrets ordered by name.
func (s *Store) ListSecrets(ctx context.Context, tenantID string) ([]store.Secret, error) {
	out, err := query(ctx, s.pool, `SELECT `+secretCols+` FROM secrets WHERE tenant_id = $1 ORDER BY name`,
		[]any{tenantID}, scanSecret)
	if err != nil {
		return nil, fmt.Errorf("list secrets of tenant %s: %w", tenantID, err)
	}
	return out, nil
}

// UpdateSecret replaces everything but the key and created_at.
func (s *Store) UpdateSecret(ctx context.Context, sec store.Secret) error {
	hosts, err := encodeHosts(sec.Hosts)
	if err == nil {
		var n int64
		n, err = s.exec(ctx, `UPDATE secrets SET hosts = $1, inject = $2, body = $3, sealed = $4, rotated_at = $5
			WHERE tenant_id = $6 AND name = $7`,
			hosts, sec.Inject, sec.Body, bytesOf(sec.Sealed), toNanos(sec.RotatedAt), sec.TenantID, sec.Name)
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
	n, err := s.exec(ctx, `DELETE FROM secrets WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete secret %q of tenant %s: %w", name, tenantID, err)
	}
	return nil
}

func scanSecret(r scanner) (store.Secret, error) {
	var sec store.Secret
	var hosts string
	var created, rotated pgtype.Int8
	err := r.Scan(&sec.TenantID, &sec.Name, &hosts, &sec.Inject, &sec.Body, &sec.Sealed, &created, &rotated)
	if err != nil {
		return store.Secret{}, mapErr(err)
	}
	if err := json.Unmarshal([]byte(hosts), &sec.Hosts); err != nil {
		return store.Secret{}, fmt.Errorf("secret %q of tenant %s: decode hosts: %w", sec.Name, sec.TenantID, err)
	}
	sec.CreatedAt, sec.RotatedAt = fromNanos(created), fromNanos(rotated)
	return sec, nil
}

// encodeHosts stores hosts as a JSON array; nil is stored as [] and reads
// back as an empty, non-nil slice.
func encodeHosts(hosts []string) (string, error) {
	if hosts == nil {
		hosts = []string{}
	}
	b, err := json.Marshal(hosts)
	if err != nil {
		return "", fmt.Errorf("encode hosts: %w", err)
	}
	return string(b), nil
}
