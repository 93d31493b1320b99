package store

import "github.com/airlockhq/airlock/internal/audit"

// DefaultMaxStorageMB is the storage quota of a tenant created without
// one (and of every tenant the migration to quotas found): 2 GiB.
const DefaultMaxStorageMB = 2048

// What the storage quota counts of a row: its payload's bytes (an event's
// data, an artifact's content, a task's spec) plus a fixed share for its
// other columns and index entries, measured on SQLite's schema (an audit
// event's two hashes and three ids, say, take ~330 bytes on disk). Every
// store counts a tenant alike.
const (
	AuditRowBytes     = 320
	NetRowBytes       = 100
	EventRowBytes     = 140
	TaskEventRowBytes = 80
	ArtifactRowBytes  = 100
	TaskRowBytes      = 200
)

// AuditEventBytes is what an audit event counts against its tenant's
// storage quota once stored.
func AuditEventBytes(e audit.Event) int64 { return int64(len(e.Data)) + AuditRowBytes }
