package store

import (
	"database/sql"
	"time"
)

// The kinds of Disk.
const (
	DiskSnapshot = "snapshot"
	DiskVolume   = "volume"
)

// Disk is disk a tenant keeps beyond any sandbox's life: a snapshot of a
// sandbox's writable layer, or a volume. Its Bytes count in the tenant's
// storage quota from create to delete.
type Disk struct {
	Kind      string // DiskSnapshot or DiskVolume
	TenantID  string
	Name      string // unique per tenant and kind
	Node      string // the node whose disk holds it
	Sandbox   string // a snapshot's sandbox
	Bytes     int64  // a snapshot's size, a volume's limit
	CreatedAt time.Time
	// Spec is what package sandbox keeps about it, as JSON; opaque here.
	Spec string
}

// DiskCols are ScanDisk's columns.
const DiskCols = `kind, tenant_id, name, node, sandbox, bytes, created_at, spec`

// ScanDisk reads a row of DiskCols.
func ScanDisk(r Scanner) (Disk, error) {
	var d Disk
	var created sql.NullInt64
	if err := r.Scan(&d.Kind, &d.TenantID, &d.Name, &d.Node, &d.Sandbox, &d.Bytes, &created, &d.Spec); err != nil {
		return Disk{}, NotFound(err)
	}
	d.CreatedAt = FromNanos(created)
	return d, nil
}

// DisksSchema is the table of Disk, the same in both stores' migrations.
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
