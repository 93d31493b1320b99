// Package sandboxrec holds package sandbox's records as the stores keep
// them (a sandbox, its states, the filter that lists them, and the disks
// a tenant keeps beyond a sandbox's life) and the methods that keep them
// (Store). Package sandbox owns them and persists them through its narrow
// sandbox.Store, which has this Store; store.Store has it too, and
// store/sqlite and store/postgres implement it. It is a leaf apart from
// sandbox because sandbox imports store: store importing sandbox would be
// a cycle. It must never import anything of Airlock's.
package sandboxrec

import (
	"context"
	"time"
)

// States of a sandbox.
const (
	Creating = "creating"
	Running  = "running"
	Paused   = "paused"  // frozen: its processes and memory kept, no CPU
	Stopped  = "stopped" // destroyed on purpose (delete or expiry)
	Failed   = "failed"  // lost: its runtime side is gone; Reason says why
)

// Sandbox is the durable record of one sandbox.
type Sandbox struct {
	ID        string            `json:"id"`
	TenantID  string            `json:"tenant_id"`
	State     string            `json:"state"`
	Reason    string            `json:"reason,omitempty"`
	Template  string            `json:"template"`
	CPUs      float64           `json:"cpus"`
	MemoryMB  int64             `json:"memory_mb"`
	Pids      int64             `json:"pids"`
	DiskMB    int64             `json:"disk_mb"`
	Env       map[string]string `json:"env,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Workdir   string            `json:"workdir,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	EndedAt   time.Time         `json:"ended_at,omitzero"`
	// Network is the egress policy as JSON, "" for the default (none). The
	// stores keep it opaque: package sandbox owns its meaning.
	Network string `json:"network,omitempty"`
	// IdleTimeoutS stops the sandbox after that long unused (0: never).
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	// Secrets are the secrets bound at create as JSON (name ->
	// placeholder), "" for none; opaque to the stores. Placeholders are
	// not secret: the sandbox holds them in its environment.
	Secrets string `json:"secrets,omitempty"`
	// Node is the node the sandbox runs on: "local" for the control
	// plane's own host, else a joined node's name.
	Node string `json:"node,omitempty"`
	// Lifecycle is the pause, snapshot, fork and volume settings and state
	// as JSON, "" for none; opaque to the stores (package sandbox owns it).
	Lifecycle string `json:"lifecycle,omitempty"`
}

// Filter selects sandboxes in ListSandboxes. Zero fields match
// everything.
type Filter struct {
	TenantID  string            // always set by the API
	State     string            // exact state
	Metadata  map[string]string // every pair must match
	After     string            // pagination: ids sorted ascending, strictly after this one
	ExpiredBy time.Time         // expires_at at or before this time
	Limit     int               // 0 = no limit
}

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
	// Spec is what package sandbox keeps about it, as JSON; opaque to the
	// stores.
	Spec string
}

// Store keeps sandbox and disk records. A missing record is an error of
// errdefs' not-found kind, an existing one where a new one is made of its
// conflict kind. Implementations are safe for concurrent use.
type Store interface {
	CreateSandbox(ctx context.Context, s Sandbox) error
	GetSandbox(ctx context.Context, id string) (Sandbox, error)
	// UpdateSandbox replaces the record with the same ID. A record saved
	// as stopped or failed loses its tokens in the same write.
	UpdateSandbox(ctx context.Context, s Sandbox) error
	// UpdateSandboxSoon is UpdateSandbox for a change a crash may lose
	// because the next start reconciles it with the runtime (creating to
	// running; running to stopped, which a restart then reports as failed,
	// lost): reads through the store see it at once, the database within
	// milliseconds.
	UpdateSandboxSoon(ctx context.Context, s Sandbox) error
	ListSandboxes(ctx context.Context, f Filter) ([]Sandbox, error)
	// Usage counts a tenant's live (creating or running) sandboxes and
	// their memory, for quotas.
	Usage(ctx context.Context, tenantID string) (sandboxes int, memoryMB int64, err error)
	// NextExpiry is the earliest expiry after after of a running sandbox,
	// zero if there is none.
	NextExpiry(ctx context.Context, after time.Time) (time.Time, error)
	// CountSandboxes counts sandbox records by state.
	CountSandboxes(ctx context.Context) (map[string]int, error)

	// CreateDisk inserts a snapshot or volume and counts its Bytes in its
	// tenant's storage (an existing name of its kind is a conflict);
	// DeleteDisk removes it and its count; ListDisks orders by tenant and
	// name ("" tenant: all).
	CreateDisk(ctx context.Context, d Disk) error
	GetDisk(ctx context.Context, kind, tenantID, name string) (Disk, error)
	ListDisks(ctx context.Context, kind, tenantID string) ([]Disk, error)
	DeleteDisk(ctx context.Context, kind, tenantID, name string) error
	// MoveDisk records that the disk is kept on node now.
	MoveDisk(ctx context.Context, kind, tenantID, name, node string) error
}
