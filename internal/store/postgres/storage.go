package postgres

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// delta is a transaction's change to its tenants' storage counts.
type delta map[string]int64

func (d delta) add(tenant string, n int64) { d[tenant] += n }

// addRows adds the sums a query of (tenant_id, bytes) rows answers, run
// in tx. Deleting statements answer with RETURNING, so what is counted
// is exactly what went, whatever another replica inserted meanwhile.
func (d delta) addRows(ctx context.Context, tx pgx.Tx, sign int64, q string, args ...any) error {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var n int64
		if err := rows.Scan(&tenant, &n); err != nil {
			return err
		}
		d.add(tenant, sign*n)
	}
	return rows.Err()
}

// write moves the stored counts by d in tx, in tenant order: two
// transactions touching the same tenants lock their rows in the same
// order and cannot deadlock.
func (d delta) write(ctx context.Context, tx pgx.Tx) error {
	tenants := make([]string, 0, len(d))
	for t, n := range d {
		if n != 0 {
			tenants = append(tenants, t)
		}
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		if _, err := tx.Exec(ctx, `INSERT INTO tenant_storage (tenant_id, bytes) VALUES ($1, $2)
			ON CONFLICT (tenant_id) DO UPDATE SET bytes = tenant_storage.bytes + excluded.bytes`, t, d[t]); err != nil {
			return fmt.Errorf("count storage of tenant %s: %w", t, err)
		}
	}
	return nil
}

// storageTx is tx for a transaction that adds or deletes rows the
// storage quota counts: fn notes each tenant's change in d, written last
// in the same transaction.
func (s *Store) storageTx(ctx context.Context, what string, fn func(tx pgx.Tx, d delta) error) error {
	return s.tx(ctx, what, func(tx pgx.Tx) error {
		d := delta{}
		if err := fn(tx, d); err != nil {
			return err
		}
		return d.write(ctx, tx)
	})
}

// StorageBytes: see store.Store. One row read, no scan.
func (s *Store) StorageBytes(ctx context.Context, tenantID string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT bytes FROM tenant_storage WHERE tenant_id = $1), 0)`, tenantID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("storage of tenant %s: %w", tenantID, err)
	}
	return n, nil
}

// StorageByTenant: see store.Store.
func (s *Store) StorageByTenant(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, bytes FROM tenant_storage WHERE bytes != 0`)
	if err != nil {
		return nil, fmt.Errorf("storage by tenant: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, fmt.Errorf("storage by tenant: %w", err)
		}
		out[t] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage by tenant: %w", err)
	}
	return out, nil
}
