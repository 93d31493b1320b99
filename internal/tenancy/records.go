package tenancy

import "time"

// The records tenancy owns. The stores keep them (Store here, and the
// whole store.Store) and decode their rows; only hashes of credentials
// are in them.

// Tenant owns keys and sandboxes.
type Tenant struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`           // unique
	MaxSandboxes int       `json:"max_sandboxes"`  // concurrent, 0 = unlimited
	MaxMemoryMB  int64     `json:"max_memory_mb"`  // sum over live sandboxes, 0 = unlimited
	MaxStorageMB int64     `json:"max_storage_mb"` // what the server keeps for it (logs, events, tasks), 0 = unlimited
	CreatedAt    time.Time `json:"created_at"`
}

// Key is an API key. Only its SHA-256 is stored.
type Key struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenant_id"`
	Name      string    `json:"name"`
	Hash      []byte    `json:"-"`
	Admin     bool      `json:"admin"` // may manage tenants and keys
	CreatedAt time.Time `json:"created_at"`
}

// Token is a credential scoped to one sandbox, with an expiry.
type Token struct {
	ID        string
	SandboxID string
	TenantID  string
	Hash      []byte
	ExpiresAt time.Time
}

// ConsoleSession is a signed-in browser: it acts as the key it was opened
// with until it expires, is signed out, or the key is deleted.
type ConsoleSession struct {
	Hash      []byte
	KeyID     string
	CreatedAt time.Time
	ExpiresAt time.Time
}
