package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// SecretCols are the columns ScanSecret reads.
const SecretCols = `tenant_id, name, hosts, inject, body, sealed, created_at, rotated_at`

// CreateSecret inserts sec; an existing (tenant, name) is ErrConflict.
func (s *SQLite) CreateSecret(ctx context.Context, sec Secret) error {
	hosts, err := EncodeHosts(sec.Hosts)
	if err == nil {
		_, err = s.exec(ctx, `INSERT INTO secrets (`+SecretCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			sec.TenantID, sec.Name, hosts, sec.Inject, sec.Body, sec.Sealed,
			ToNanos(sec.CreatedAt), ToNanos(sec.RotatedAt))
	}
	if err != nil {
		return fmt.Errorf("create secret %q of tenant %s: %w", sec.Name, sec.TenantID, err)
	}
	return nil
}

// GetSecret returns the tenant's secret with the name.
func (s *SQLite) GetSecret(ctx context.Context, tenantID, name string) (Secret, error) {
	sec, err := ScanSecret(s.queryRow(ctx, `SELECT `+SecretCols+` FROM secrets
		WHERE tenant_id = ? AND name = ?`, tenantID, name))
	if err != nil {
		return Secret{}, fmt.Errorf("get secret %q of tenant %s: %w", name, tenantID, err)
	}
	return sec, nil
}

// ListSecrets returns the tenant's secrets ordered by name.
func (s *SQLite) ListSecrets(ctx context.Context, tenantID string) ([]Secret, error) {
	rows, err := s.query(ctx, `SELECT `+SecretCols+` FROM secrets
		WHERE tenant_id = ? ORDER BY name`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list secrets of tenant %s: %w", tenantID, err)
	}
	out, err := scanAll(rows, ScanSecret)
	if err != nil {
		return nil, fmt.Errorf("list secrets of tenant %s: %w", tenantID, err)
	}
	return out, nil
}

// UpdateSecret replaces everything but the key and created_at.
func (s *SQLite) UpdateSecret(ctx context.Context, sec Secret) error {
	hosts, err := EncodeHosts(sec.Hosts)
	if err == nil {
		var n int64
		n, err = s.exec(ctx, `UPDATE secrets SET hosts = ?, inject = ?, body = ?, sealed = ?, rotated_at = ?
			WHERE tenant_id = ? AND name = ?`,
			hosts, sec.Inject, sec.Body, sec.Sealed, ToNanos(sec.RotatedAt), sec.TenantID, sec.Name)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("update secret %q of tenant %s: %w", sec.Name, sec.TenantID, err)
	}
	return nil
}

// DeleteSecret removes the tenant's secret with the name.
func (s *SQLite) DeleteSecret(ctx context.Context, tenantID, name string) error {
	n, err := s.exec(ctx, `DELETE FROM secrets WHERE tenant_id = ? AND name = ?`, tenantID, name)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete secret %q of tenant %s: %w", name, tenantID, err)
	}
	return nil
}

// ScanSecret reads a row of the secret columns.
func ScanSecret(r Scanner) (Secret, error) {
	var sec Secret
	var hosts string
	var created, rotated sql.NullInt64
	err := r.Scan(&sec.TenantID, &sec.Name, &hosts, &sec.Inject, &sec.Body, &sec.Sealed, &created, &rotated)
	if err != nil {
		return Secret{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(hosts), &sec.Hosts); err != nil {
		return Secret{}, fmt.Errorf("secret %q of tenant %s: decode hosts: %w", sec.Name, sec.TenantID, err)
	}
	sec.CreatedAt, sec.RotatedAt = FromNanos(created), FromNanos(rotated)
	return sec, nil
}

// EncodeHosts stores hosts as a JSON array; nil is stored as [] (so hosts
// is never NULL) and reads back as an empty, non-nil slice.
func EncodeHosts(hosts []string) (string, error) {
	if hosts == nil {
		hosts = []string{}
	}
	b, err := json.Marshal(hosts)
	if err != nil {
		return "", fmt.Errorf("encode hosts: %w", err)
	}
	return string(b), nil
}
