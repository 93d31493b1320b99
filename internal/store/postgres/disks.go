package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// CreateDisk: see store.Store.
func (s *Store) CreateDisk(ctx context.Context, d sandboxrec.Disk) error {
	return s.storageTx(ctx, "create "+d.Kind, func(tx pgx.Tx, sd delta) error {
		_, err := tx.Exec(ctx, `INSERT INTO disks (`+store.DiskCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			d.Kind, d.TenantID, d.Name, d.Node, d.Sandbox, d.Bytes, store.ToNanos(d.CreatedAt), d.Spec)
		if err != nil {
			return fmt.Errorf("%s %s: %w", d.Kind, d.Name, mapErr(err))
		}
		sd.add(d.TenantID, d.Bytes)
		return nil
	})
}

// GetDisk: see store.Store.
func (s *Store) GetDisk(ctx context.Context, kind, tenantID, name string) (sandboxrec.Disk, error) {
	d, err := store.ScanDisk(s.pool.QueryRow(ctx, `SELECT `+store.DiskCols+` FROM disks
		WHERE tenant_id = $1 AND kind = $2 AND name = $3`, tenantID, kind, name))
	if err != nil {
		return sandboxrec.Disk{}, fmt.Errorf("get %s %s: %w", kind, name, mapErr(err))
	}
	return d, nil
}

// ListDisks: see store.Store.
func (s *Store) ListDisks(ctx context.Context, kind, tenantID string) ([]sandboxrec.Disk, error) {
	q, args := `SELECT `+store.DiskCols+` FROM disks WHERE kind = $1`, []any{kind}
	if tenantID != "" {
		q, args = q+` AND tenant_id = $2`, append(args, tenantID)
	}
	out, err := query(ctx, s.pool, q+` ORDER BY tenant_id, name`, args, store.ScanDisk)
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", kind, err)
	}
	return out, nil
}

// DeleteDisk: see store.Store.
func (s *Store) DeleteDisk(ctx context.Context, kind, tenantID, name string) error {
	return s.storageTx(ctx, "delete "+kind, func(tx pgx.Tx, sd delta) error {
		var bytes int64
		err := tx.QueryRow(ctx, `DELETE FROM disks WHERE tenant_id = $1 AND kind = $2 AND name = $3 RETURNING bytes`,
			tenantID, kind, name).Scan(&bytes)
		if err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, mapErr(err))
		}
		sd.add(tenantID, -bytes)
		return nil
	})
}

// MoveDisk: see store.Store.
func (s *Store) MoveDisk(ctx context.Context, kind, tenantID, name, node string) error {
	n, err := s.exec(ctx, `UPDATE disks SET node = $1 WHERE tenant_id = $2 AND kind = $3 AND name = $4`, node, tenantID, kind, name)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("move %s %s: %w", kind, name, err)
	}
	return nil
}
