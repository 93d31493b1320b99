package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"sync"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
)

// storageRecount sums, per tenant, what the quota counts over every table
// it covers: the migration fills tenant_storage with it, and tests hold
// the writers' running counts against it. Webhook deliveries are left
// out: a tenant has at most 20 webhooks and they go with the events.
var storageRecount = fmt.Sprintf(`SELECT tenant_id, SUM(b) FROM (
		SELECT tenant_id, octet_length(data) + %d AS b FROM audit_events
		UNION ALL SELECT tenant_id, octet_length(data) + %d FROM net_events
		UNION ALL SELECT tenant_id, octet_length(data) + %d FROM tenant_events
		UNION ALL SELECT t.tenant_id, octet_length(t.spec) + %d FROM tasks t
		UNION ALL SELECT t.tenant_id, octet_length(e.data) + %d FROM task_events e JOIN tasks t ON t.id = e.task_id
		UNION ALL SELECT t.tenant_id, octet_length(a.content) + %d FROM task_artifacts a JOIN tasks t ON t.id = a.task_id
	) GROUP BY tenant_id`, store.AuditRowBytes, store.NetRowBytes, store.EventRowBytes, store.TaskRowBytes, store.TaskEventRowBytes, store.ArtifactRowBytes)

// storageSchema adds the storage quota: each tenant's limit (existing
// tenants get the default), the running count of what the store keeps
// for each tenant, filled once here by counting and from then on kept by
// the writers in the transactions that add and delete the rows, and a
// flag on each audit log that its output recording has stopped, so a
// restart does not start it again.
var storageSchema = fmt.Sprintf(`ALTER TABLE tenants ADD COLUMN max_storage_mb INTEGER NOT NULL DEFAULT %d;
	ALTER TABLE audit_heads ADD COLUMN output_capped INTEGER NOT NULL DEFAULT 0;
	UPDATE audit_heads SET output_capped = 1 WHERE sandbox_id IN
		(SELECT sandbox_id FROM audit_events WHERE type = '%s');
	CREATE TABLE tenant_storage (
		tenant_id TEXT PRIMARY KEY,
		bytes     INTEGER NOT NULL
	) WITHOUT ROWID;
	INSERT INTO tenant_storage (tenant_id, bytes) %s;`, store.DefaultMaxStorageMB, audit.OutputCapped, storageRecount)

// storageDelta is a transaction's change to its tenants' storage.
type storageDelta map[string]int64

func (d storageDelta) add(tenant string, n int64) { d[tenant] += n }

// addRows adds the sums a query of (tenant_id, bytes) rows answers.
func (d storageDelta) addRows(ctx context.Context, tx *sql.Tx, sign int64, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var n sql.NullInt64
		if err := rows.Scan(&tenant, &n); err != nil {
			return err
		}
		d.add(tenant, sign*n.Int64)
	}
	return rows.Err()
}

// write moves the stored counts by d, in the caller's transaction.
func (d storageDelta) write(ctx context.Context, tx *sql.Tx) error {
	for tenant, n := range d {
		if n == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenant_storage (tenant_id, bytes) VALUES (?, ?)
			ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes`, tenant, n); err != nil {
			return fmt.Errorf("count storage of tenant %s: %w", tenant, err)
		}
	}
	return nil
}

// storageCounts mirrors tenant_storage in memory, so the quota check that
// precedes every recorded piece of output costs no query. A change is
// applied once the transaction that wrote it has committed; like the
// sandbox cache it assumes one daemon per database.
type storageCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *storageCounts) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT tenant_id, bytes FROM tenant_storage`)
	if err != nil {
		return fmt.Errorf("load storage counts: %w", err)
	}
	m := map[string]int64{}
	for rows.Next() {
		var tenant string
		var n int64
		if err := rows.Scan(&tenant, &n); err != nil {
			rows.Close()
			return fmt.Errorf("load storage counts: %w", err)
		}
		m[tenant] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load storage counts: %w", err)
	}
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
	return rows.Close()
}

func (c *storageCounts) apply(d storageDelta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tenant, n := range d {
		c.m[tenant] += n
	}
}

// storageTx is writeTx for a transaction that adds or deletes rows the
// storage quota counts: fn notes each tenant's change in d, which is
// written in the same transaction and mirrored once it commits.
func (s *Store) storageTx(ctx context.Context, what string, fn func(tx *sql.Tx, d storageDelta) error) error {
	d := storageDelta{}
	return s.writeTxThen(ctx, what, func(tx *sql.Tx) error {
		if err := fn(tx, d); err != nil {
			return err
		}
		return d.write(ctx, tx)
	}, func() { s.storage.apply(d) })
}

// StorageBytes: see store.Store.
func (s *Store) StorageBytes(_ context.Context, tenantID string) (int64, error) {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	return s.storage.m[tenantID], nil
}

// StorageByTenant: see store.Store.
func (s *Store) StorageByTenant(context.Context) (map[string]int64, error) {
	s.storage.mu.Lock()
	defer s.storage.mu.Unlock()
	out := maps.Clone(s.storage.m)
	maps.DeleteFunc(out, func(_ string, n int64) bool { return n == 0 })
	return out, nil
}
