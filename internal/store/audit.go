package store

import "time"

// AuditFilter selects events of one sandbox's audit log. Zero fields
// select everything.
type AuditFilter struct {
	AfterSeq int64    // events after this sequence number
	Types    []string // only these types
	From, To time.Time
	Limit    int
}
