package store

import (
	"database/sql"

	"github.com/airlockhq/airlock/internal/tenancy"
)

// TenantCols are the columns ScanTenant reads, in its order.
const TenantCols = `id, name, max_sandboxes, max_memory_mb, max_storage_mb, created_at`

// ScanTenant reads a row of the tenant columns (TenantCols).
func ScanTenant(r Scanner) (tenancy.Tenant, error) {
	var t tenancy.Tenant
	var created sql.NullInt64
	if err := r.Scan(&t.ID, &t.Name, &t.MaxSandboxes, &t.MaxMemoryMB, &t.MaxStorageMB, &created); err != nil {
		return tenancy.Tenant{}, NotFound(err)
	}
	t.CreatedAt = FromNanos(created)
	return t, nil
}

// KeyCols are the columns ScanKey reads.
const KeyCols = `id, tenant_id, name, hash, admin, created_at`

// ScanKey reads a row of the key columns.
func ScanKey(r Scanner) (tenancy.Key, error) {
	var k tenancy.Key
	var created sql.NullInt64
	if err := r.Scan(&k.ID, &k.TenantID, &k.Name, &k.Hash, &k.Admin, &created); err != nil {
		return tenancy.Key{}, NotFound(err)
	}
	k.CreatedAt = FromNanos(created)
	return k, nil
}
