package store

import (
	"database/sql"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// DiskCols are ScanDisk's columns.
const DiskCols = `kind, tenant_id, name, node, sandbox, bytes, created_at, spec`

// ScanDisk reads a row of DiskCols.
func ScanDisk(r Scanner) (sandboxrec.Disk, error) {
	var d sandboxrec.Disk
	var created sql.NullInt64
	if err := r.Scan(&d.Kind, &d.TenantID, &d.Name, &d.Node, &d.Sandbox, &d.Bytes, &created, &d.Spec); err != nil {
		return sandboxrec.Disk{}, NotFound(err)
	}
	d.CreatedAt = FromNanos(created)
	return d, nil
}

// DisksSchema is the table of sandboxrec.Disk, the same in both stores' migrations.
const DisksSchema = `CREATE TABLE disks (
		kind       TEXT NOT NULL,
		tenant_id  TEXT NOT NULL,
		name       TEXT NOT NULL,
		node       TEXT NOT NULL,
		sandbox    TEXT NOT NULL DEFAULT '',
		bytes      BIGINT NOT NULL,
		created_at BIGINT,
		spec       TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (tenant_id, kind, name)
	);`
