package store

import "time"

// LiveConn is a connection the daemon carries (through a sandbox's egress
// proxy, or into a sandbox's port) that was open when last written. One
// found at start was cut by the daemon's going away without a word (a
// kill -9, a crash), which the new daemon logs.
type LiveConn struct {
	ID        string
	SandboxID string
	Kind      string // "egress" or "port"
	OpenedAt  time.Time
	Data      []byte // the kind's JSON
}
