package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// CreateTenant inserts t; an existing id or name is ErrConflict.
func (s *Store) CreateTenant(ctx context.Context, t tenancy.Tenant) error {
	_, err := s.exec(ctx, `INSERT INTO tenants (`+store.TenantCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		t.ID, t.Name, t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, store.ToNanos(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("create tenant %s: %w", t.ID, err)
	}
	return nil
}

// UpdateTenantQuota: see store.Store.
func (s *Store) UpdateTenantQuota(ctx context.Context, t tenancy.Tenant) (tenancy.Tenant, error) {
	got, err := store.ScanTenant(s.pool.QueryRow(ctx, `UPDATE tenants SET max_sandboxes = $1, max_memory_mb = $2, max_storage_mb = $3
		WHERE id = $4 RETURNING `+store.TenantCols, t.MaxSandboxes, t.MaxMemoryMB, t.MaxStorageMB, t.ID))
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("update tenant %s: %w", t.ID, err)
	}
	return got, nil
}

// GetTenant returns the tenant with the id.
func (s *Store) GetTenant(ctx context.Context, id string) (tenancy.Tenant, error) {
	t, err := store.ScanTenant(s.pool.QueryRow(ctx, `SELECT `+store.TenantCols+` FROM tenants WHERE id = $1`, id))
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("get tenant %s: %w", id, err)
	}
	return t, nil
}

// TenantByName returns the tenant with the name.
func (s *Store) TenantByName(ctx context.Context, name string) (tenancy.Tenant, error) {
	t, err := store.ScanTenant(s.pool.QueryRow(ctx, `SELECT `+store.TenantCols+` FROM tenants WHERE name = $1`, name))
	if err != nil {
		return tenancy.Tenant{}, fmt.Errorf("get tenant named %q: %w", name, err)
	}
	return t, nil
}

// ListTenants returns every tenant, ordered by name.
func (s *Store) ListTenants(ctx context.Context) ([]tenancy.Tenant, error) {
	out, err := query(ctx, s.pool, `SELECT `+store.TenantCols+` FROM tenants ORDER BY name`, nil, store.ScanTenant)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// CreateKey inserts k; an existing id or hash is ErrConflict, a missing
// tenant ErrNotFound.
func (s *Store) CreateKey(ctx context.Context, k tenancy.Key) error {
	_, err := s.exec(ctx, `INSERT INTO keys (`+store.KeyCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.TenantID, k.Name, k.Hash, k.Admin, store.ToNanos(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash returns the key whose SHA-256 is hash.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (tenancy.Key, error) {
	k, err := store.ScanKey(s.pool.QueryRow(ctx, `SELECT `+store.KeyCols+` FROM keys WHERE hash = $1`, hash))
	if err != nil {
		// Never log the hash: it identifies the key.
		return tenancy.Key{}, fmt.Errorf("get key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns the tenant's keys, or all keys if tenantID is "",
// ordered by id.
func (s *Store) ListKeys(ctx context.Context, tenantID string) ([]tenancy.Key, error) {
	out, err := query(ctx, s.pool, `SELECT `+store.KeyCols+` FROM keys WHERE $1 = '' OR tenant_id = $1 ORDER BY id`,
		[]any{tenantID}, store.ScanKey)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// DeleteKey removes the key with the id, and with it its console
// sessions (ON DELETE CASCADE).
func (s *Store) DeleteKey(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM keys WHERE id = $1`, id)
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
	_, err := s.exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5)`,
		t.ID, t.SandboxID, t.TenantID, t.Hash, store.ToNanos(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create token %s: %w", t.ID, err)
	}
	return nil
}

// TokenByHash returns the token whose hash is hash, expired or not: the
// caller checks ExpiresAt.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (tenancy.Token, error) {
	var t tenancy.Token
	var expires sql.NullInt64
	err := s.pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = $1`, hash).
		Scan(&t.ID, &t.SandboxID, &t.TenantID, &t.Hash, &expires)
	if err != nil {
		return tenancy.Token{}, fmt.Errorf("get token by hash: %w", mapErr(err))
	}
	t.ExpiresAt = store.FromNanos(expires)
	return t, nil
}

// DeleteTokens removes every token of the sandbox; none is not an error.
func (s *Store) DeleteTokens(ctx context.Context, sandboxID string) error {
	if _, err := s.exec(ctx, `DELETE FROM tokens WHERE sandbox_id = $1`, sandboxID); err != nil {
		return fmt.Errorf("delete tokens of sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// CreateConsoleSession inserts cs and removes the sessions that have
// expired by its creation. It is inserted only if its key still exists;
// a key deleted meanwhile (here or on another replica) is ErrNotFound.
func (s *Store) CreateConsoleSession(ctx context.Context, cs tenancy.ConsoleSession) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, store.ToNanos(cs.CreatedAt)); err != nil {
		return fmt.Errorf("prune console sessions: %w", err)
	}
	n, err := s.exec(ctx, `INSERT INTO console_sessions (hash, key_id, created_at, expires_at)
		SELECT $1, id, $2, $3 FROM keys WHERE id = $4`,
		cs.Hash, store.ToNanos(cs.CreatedAt), store.ToNanos(cs.ExpiresAt), cs.KeyID)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create console session: %w", err)
	}
	return nil
}

// ConsoleSessionByHash returns the session whose cookie hashes to hash,
// with the key it acts as, expired or not: the caller checks ExpiresAt.
func (s *Store) ConsoleSessionByHash(ctx context.Context, hash []byte) (tenancy.ConsoleSession, tenancy.Key, error) {
	var cs tenancy.ConsoleSession
	var k tenancy.Key
	var created, expires, kcreated sql.NullInt64
	err := s.pool.QueryRow(ctx, `SELECT c.hash, c.key_id, c.created_at, c.expires_at, k.id, k.tenant_id, k.name, k.hash, k.admin, k.created_at
		FROM console_sessions c JOIN keys k ON k.id = c.key_id WHERE c.hash = $1`, hash).
		Scan(&cs.Hash, &cs.KeyID, &created, &expires, &k.ID, &k.TenantID, &k.Name, &k.Hash, &k.Admin, &kcreated)
	if err != nil {
		return tenancy.ConsoleSession{}, tenancy.Key{}, fmt.Errorf("get console session: %w", mapErr(err))
	}
	cs.CreatedAt, cs.ExpiresAt, k.CreatedAt = store.FromNanos(created), store.FromNanos(expires), store.FromNanos(kcreated)
	return cs, k, nil
}

// DeleteConsoleSession removes the session; one that does not exist is
// not an error (signing out twice is fine).
func (s *Store) DeleteConsoleSession(ctx context.Context, hash []byte) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE hash = $1`, hash); err != nil {
		return fmt.Errorf("delete console session: %w", err)
	}
	return nil
}
