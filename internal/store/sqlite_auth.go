package store

import (
	"context"
	"database/sql"
	"fmt"
)

// TenantCols are the columns ScanTenant reads, in its order.
const TenantCols = `id, name, max_sandboxes, max_memory_mb, max_storage_mb, created_at`

// CreateTenant inserts t; an existing id or name is ErrConflict.
func (s *SQLite) CreateTenant(ctx context.Context, t Tenant) error {
	_, err := s.exec(ctx, `INSERT INTO tenants (`+TenantCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.Name, t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, ToNanos(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("create tenant %s: %w", t.ID, err)
	}
	return nil
}

// UpdateTenantQuota: see Store.
func (s *SQLite) UpdateTenantQuota(ctx context.Context, t Tenant) (Tenant, error) {
	n, err := s.exec(ctx, `UPDATE tenants SET max_sandboxes = ?, max_memory_mb = ?, max_storage_mb = ? WHERE id = ?`,
		t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, t.ID)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("update tenant %s: %w", t.ID, err)
	}
	return s.GetTenant(ctx, t.ID)
}

// GetTenant returns the tenant with the id.
func (s *SQLite) GetTenant(ctx context.Context, id string) (Tenant, error) {
	t, err := ScanTenant(s.queryRow(ctx, `SELECT `+TenantCols+` FROM tenants WHERE id = ?`, id))
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant %s: %w", id, err)
	}
	return t, nil
}

// TenantByName returns the tenant with the name.
func (s *SQLite) TenantByName(ctx context.Context, name string) (Tenant, error) {
	t, err := ScanTenant(s.queryRow(ctx, `SELECT `+TenantCols+` FROM tenants WHERE name = ?`, name))
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant named %q: %w", name, err)
	}
	return t, nil
}

// ListTenants returns every tenant, ordered by name.
func (s *SQLite) ListTenants(ctx context.Context) ([]Tenant, error) {
	rows, err := s.query(ctx, `SELECT `+TenantCols+` FROM tenants ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out, err := scanAll(rows, ScanTenant)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// ScanTenant reads a row of the tenant columns (TenantCols).
func ScanTenant(r Scanner) (Tenant, error) {
	var t Tenant
	var created sql.NullInt64
	if err := r.Scan(&t.ID, &t.Name, &t.MaxSandboxes, &t.MaxMemoryMB, &t.MaxStorageMB, &created); err != nil {
		return Tenant{}, notFound(err)
	}
	t.CreatedAt = FromNanos(created)
	return t, nil
}

// KeyCols are the columns ScanKey reads.
const KeyCols = `id, tenant_id, name, hash, admin, created_at`

// CreateKey inserts k; an existing id or hash is ErrConflict, a missing
// tenant ErrNotFound.
func (s *SQLite) CreateKey(ctx context.Context, k Key) error {
	_, err := s.exec(ctx, `INSERT INTO keys (`+KeyCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Name, k.Hash, k.Admin, ToNanos(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash returns the key whose SHA-256 is hash.
func (s *SQLite) KeyByHash(ctx context.Context, hash []byte) (Key, error) {
	k, err := ScanKey(s.queryRow(ctx, `SELECT `+KeyCols+` FROM keys WHERE hash = ?`, hash))
	if err != nil {
		// Never log the hash: it identifies the key.
		return Key{}, fmt.Errorf("get key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns the tenant's keys, or all keys if tenantID is "",
// ordered by id.
func (s *SQLite) ListKeys(ctx context.Context, tenantID string) ([]Key, error) {
	rows, err := s.query(ctx, `SELECT `+KeyCols+` FROM keys WHERE ? = '' OR tenant_id = ? ORDER BY id`,
		tenantID, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	out, err := scanAll(rows, ScanKey)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// DeleteKey removes the key with the id.
func (s *SQLite) DeleteKey(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM keys WHERE id = ?`, id)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete key %s: %w", id, err)
	}
	return nil
}

// ScanKey reads a row of the key columns.
func ScanKey(r Scanner) (Key, error) {
	var k Key
	var created sql.NullInt64
	if err := r.Scan(&k.ID, &k.TenantID, &k.Name, &k.Hash, &k.Admin, &created); err != nil {
		return Key{}, notFound(err)
	}
	k.CreatedAt = FromNanos(created)
	return k, nil
}

const tokenCols = `id, sandbox_id, tenant_id, hash, expires_at`

// CreateToken inserts t; an existing id or hash is ErrConflict.
func (s *SQLite) CreateToken(ctx context.Context, t Token) error {
	_, err := s.exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.SandboxID, t.TenantID, t.Hash, ToNanos(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create token %s: %w", t.ID, err)
	}
	return nil
}

// TokenByHash returns the token whose hash is hash, expired or not: the
// caller checks ExpiresAt.
func (s *SQLite) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	// A pending stop deletes the sandbox's tokens when it is written.
	if err := s.flushSandboxes(ctx); err != nil {
		return Token{}, err
	}
	var t Token
	var expires sql.NullInt64
	err := s.queryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.SandboxID, &t.TenantID, &t.Hash, &expires)
	if err != nil {
		return Token{}, fmt.Errorf("get token by hash: %w", notFound(err))
	}
	t.ExpiresAt = FromNanos(expires)
	return t, nil
}

// DeleteTokens removes every token of the sandbox. A sandbox without
// tokens is not an error: teardown calls this unconditionally.
func (s *SQLite) DeleteTokens(ctx context.Context, sandboxID string) error {
	if _, err := s.exec(ctx, `DELETE FROM tokens WHERE sandbox_id = ?`, sandboxID); err != nil {
		return fmt.Errorf("delete tokens of sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// scanAll reads every row with scan and closes rows.
func scanAll[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
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
