package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// CreateTenant inserts t; an existing id or name is ErrConflict.
func (s *Store) CreateTenant(ctx context.Context, t tenancy.Tenant) error {
	_, err := s.exec(ctx, `INSERT INTO tenants (`+store.TenantCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.Name, t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, store.ToNanos(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("create tenant %s: %w", t.ID, err)
	}
	return nil
}

// UpdateTenantQuota: see store.Store.
func (s *Store) UpdateTenantQuota(ctx context.Context, t tenancy.Tenant) (tenancy.Tenant, error) {
	n, err := s.exec(ctx, `UPDATE tenants SET max_sandboxes = ?, max_memory_mb = ?, max_storage_mb = ? WHERE id = ?`,
		t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, t.ID)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("update tenant %s: %w", t.ID, err)
	}
	return s.GetTenant(ctx, t.ID)
}

// GetTenant returns the tenant with the id.
func (s *Store) GetTenant(ctx context.Context, id string) (tenancy.Tenant, error) {
	t, err := store.ScanTenant(s.queryRow(ctx, `SELECT `+store.TenantCols+` FROM tenants WHERE id = ?`, id))
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("get tenant %s: %w", id, err)
	}
	return t, nil
}

// TenantByName returns the tenant with the name.
func (s *Store) TenantByName(ctx context.Context, name string) (tenancy.Tenant, error) {
	t, err := store.ScanTenant(s.queryRow(ctx, `SELECT `+store.TenantCols+` FROM tenants WHERE name = ?`, name))
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("get tenant named %q: %w", name, err)
	}
	return t, nil
}

// ListTenants returns every tenant, ordered by name.
func (s *Store) ListTenants(ctx context.Context) ([]tenancy.Tenant, error) {
	rows, err := s.query(ctx, `SELECT `+store.TenantCols+` FROM tenants ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out, err := scanAll(rows, store.ScanTenant)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// CreateKey inserts k; an existing id or hash is ErrConflict, a missing
// tenant ErrNotFound.
func (s *Store) CreateKey(ctx context.Context, k tenancy.Key) error {
	_, err := s.exec(ctx, `INSERT INTO keys (`+store.KeyCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Name, k.Hash, k.Admin, store.ToNanos(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash returns the key whose SHA-256 is hash.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (tenancy.Key, error) {
	k, err := store.ScanKey(s.queryRow(ctx, `SELECT `+store.KeyCols+` FROM keys WHERE hash = ?`, hash))
	if err != nil {
		// Never log the hash: it identifies the key.
		return tenancy.Key{}, fmt.Errorf("get key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns the tenant's keys, or all keys if tenantID is "",
// ordered by id.
func (s *Store) ListKeys(ctx context.Context, tenantID string) ([]tenancy.Key, error) {
	rows, err := s.query(ctx, `SELECT `+store.KeyCols+` FROM keys WHERE ? = '' OR tenant_id = ? ORDER BY id`,
		tenantID, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	out, err := scanAll(rows, store.ScanKey)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// DeleteKey removes the key with the id.
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM keys WHERE id = ?`, id)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete key %s: %w", id, err)
	}
	return nil
}

const tokenCols = `id, sandbox_id, tenant_id, hash, expires_at`

// CreateToken inserts t; an existing id or hash is ErrConflict.
func (s *Store) CreateToken(ctx context.Context, t tenancy.Token) error {
	_, err := s.exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.SandboxID, t.TenantID, t.Hash, store.ToNanos(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create token %s: %w", t.ID, err)
	}
	return nil
}

// TokenByHash returns the token whose hash is hash, expired or not: the
// caller checks ExpiresAt.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (tenancy.Token, error) {
	// A pending stop deletes the sandbox's tokens when it is written.
	if err := s.flushSandboxes(ctx); err != nil {
		return tenancy.Token{}, err
	}
	var t tenancy.Token
	var expires sql.NullInt64
	err := s.queryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.SandboxID, &t.TenantID, &t.Hash, &expires)
	if err != nil {
		return tenancy.Token{}, fmt.Errorf("get token by hash: %w", store.NotFound(err))
	}
	t.ExpiresAt = store.FromNanos(expires)
	return t, nil
}

// DeleteTokens removes every token of the sandbox. A sandbox without
// tokens is not an error: teardown calls this unconditionally.
func (s *Store) DeleteTokens(ctx context.Context, sandboxID string) error {
	if _, err := s.exec(ctx, `DELETE FROM tokens WHERE sandbox_id = ?`, sandboxID); err != nil {
		return fmt.Errorf("delete tokens of sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// scanAll reads every row with scan and closes rows.
func scanAll[T any](rows *sql.Rows, scan func(store.Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
