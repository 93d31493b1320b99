package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// CreateDisk inserts d and counts its bytes in its tenant's storage; an
// existing name of its kind is ErrConflict.
func (s *Store) CreateDisk(ctx context.Context, d sandboxrec.Disk) error {
	return s.storageTx(ctx, "create "+d.Kind, func(tx *sql.Tx, sd storageDelta) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO disks (`+store.DiskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			d.Kind, d.TenantID, d.Name, d.Node, d.Sandbox, d.Bytes, store.ToNanos(d.CreatedAt), d.Spec)
		if err != nil {
			return fmt.Errorf("%s %s: %w", d.Kind, d.Name, mapErr(err))
		}
		sd.add(d.TenantID, d.Bytes)
		return nil
	})
}

// GetDisk returns the tenant's disk of that kind and name.
func (s *Store) GetDisk(ctx context.Context, kind, tenantID, name string) (sandboxrec.Disk, error) {
	d, err := store.ScanDisk(s.queryRow(ctx, `SELECT `+store.DiskCols+` FROM disks WHERE tenant_id = ? AND kind = ? AND name = ?`,
		tenantID, kind, name))
	if err != nil {
		return sandboxrec.Disk{}, fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	return d, nil
}

// ListDisks returns the tenant's disks of a kind by name ("" tenant: every
// tenant's, by tenant and name).
func (s *Store) ListDisks(ctx context.Context, kind, tenantID string) ([]sandboxrec.Disk, error) {
	q, args := `SELECT `+store.DiskCols+` FROM disks WHERE kind = ?`, []any{kind}
	if tenantID != "" {
		q, args = q+` AND tenant_id = ?`, append(args, tenantID)
	}
	rows, err := s.query(ctx, q+` ORDER BY tenant_id, name`, args...)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	defer rows.Close()
	var out []sandboxrec.Disk
	for rows.Next() {
		d, err := store.ScanDisk(rows)
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeleteDisk removes the tenant's disk and its bytes from the tenant's
// storage; ErrNotFound if there is none.
func (s *Store) DeleteDisk(ctx context.Context, kind, tenantID, name string) error {
	return s.storageTx(ctx, "delete "+kind, func(tx *sql.Tx, sd storageDelta) error {
		var bytes int64
		err := tx.QueryRowContext(ctx, `DELETE FROM disks WHERE tenant_id = ? AND kind = ? AND name = ? RETURNING bytes`,
			tenantID, kind, name).Scan(&bytes)
		if err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, store.NotFound(err))
		}
		sd.add(tenantID, -bytes)
		return nil
	})
}

// MoveDisk: see store.Store.
func (s *Store) MoveDisk(ctx context.Context, kind, tenantID, name, node string) error {
	n, err := s.exec(ctx, `UPDATE disks SET node = ? WHERE tenant_id = ? AND kind = ? AND name = ?`, node, tenantID, kind, name)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("move %s %s: %w", kind, name, err)
	}
	return nil
}
