// Package store persists Airlock's records: tenants, API keys, sandboxes,
// sandbox tokens and tenant secrets, behind one interface that SQLite (the
// embedded default, store/sqlite) and PostgreSQL (store/postgres)
// implement; this package holds that interface, the records and the row
// codecs both share, and no database of its own. It stores only
// hashes of credentials (keys, tokens) and only sealed (encrypted) tenant
// secrets, never a plaintext one, and it never decides policy: quotas and
// ownership are checked by its callers.
package store

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Errors callers match with errors.Is. Each also matches its errdefs
// kind, which the packages that define their own narrow store (tenancy,
// nodes) match instead, since they do not import this one.
var (
	ErrNotFound error = errdefs.Sentinel("not found", errdefs.ErrNotFound)
	ErrConflict error = errdefs.Sentinel("already exists", errdefs.ErrConflict)
)

// Sandbox states.
const (
	StateCreating = "creating"
	StateRunning  = "running"
	StatePaused   = "paused"  // frozen: its processes and memory kept, no CPU
	StateStopped  = "stopped" // destroyed on purpose (delete or expiry)
	StateFailed   = "failed"  // lost: its runtime side is gone; Reason says why
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
	// store keeps it opaque: the sandbox package owns its meaning.
	Network string `json:"network,omitempty"`
	// IdleTimeoutS stops the sandbox after that long unused (0: never).
	IdleTimeoutS int64 `json:"idle_timeout_s,omitempty"`
	// Secrets are the secrets bound at create as JSON (name ->
	// placeholder), "" for none; opaque to the store. Placeholders are not
	// secret: the sandbox holds them in its environment.
	Secrets string `json:"secrets,omitempty"`
	// Node is the node the sandbox runs on: "local" for the control
	// plane's own host, else a joined node's name.
	Node string `json:"node,omitempty"`
	// Lifecycle is the pause, snapshot, fork and volume settings and state
	// as JSON, "" for none; opaque to the store (package sandbox owns it).
	Lifecycle string `json:"lifecycle,omitempty"`
}

// Secret is a tenant's secret. Sealed is the value encrypted by package
// secrets; the store never sees a plaintext value.
type Secret struct {
	TenantID  string
	Name      string // unique per tenant
	Hosts     []string
	Inject    string // JSON of secrets.Inject, "" if none (opaque to the store)
	Body      bool
	Sealed    []byte
	CreatedAt time.Time
	RotatedAt time.Time // zero until the first rotation
}

// NetEvent is one entry of a sandbox's egress log; Data is the event as
// JSON, opaque to the store. ID orders the log (and pages it).
type NetEvent struct {
	ID        int64
	SandboxID string
	TenantID  string
	Time      time.Time
	Data      []byte
}

// SandboxUsage is what one sandbox used, kept after it ends (and after
// its record is deleted). EndedAt is zero while it runs; its numbers then
// are as of UpdatedAt.
type SandboxUsage struct {
	SandboxID       string
	TenantID        string
	CreatedAt       time.Time
	EndedAt         time.Time
	UpdatedAt       time.Time
	CPUSeconds      float64
	MemoryPeakBytes int64
	EgressBytesOut  int64 // from the sandbox
	EgressBytesIn   int64 // to the sandbox
	ExecCount       int64
	MemoryMB        int64 // its memory limit
	Model           ModelUsage
}

// ModelUsage is what model calls used, counted at the egress proxy from
// the model APIs' own answers.
type ModelUsage struct {
	Calls int64
	// Unmetered counts the calls whose usage could not be read: their
	// tokens are in no total.
	Unmetered         int64
	InputTokens       int64 // input not read from a cache
	CachedInputTokens int64
	OutputTokens      int64 // reasoning included
	ReasoningTokens   int64
	// CostUSD is priced by the operator's table as each call is counted
	// (0 without one).
	CostUSD float64
}

// Add adds o to u.
func (u *ModelUsage) Add(o ModelUsage) {
	u.Calls += o.Calls
	u.Unmetered += o.Unmetered
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.OutputTokens += o.OutputTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CostUSD += o.CostUSD
}

// UsageFilter selects the sandboxes created in [From, To) (a zero bound is
// open), of one tenant if TenantID is set. Now ends the wall time of
// those still running.
type UsageFilter struct {
	TenantID string
	From, To time.Time
	Now      time.Time
}

// TenantUsage sums the usage of one tenant's sandboxes.
type TenantUsage struct {
	TenantID        string
	Sandboxes       int64
	SandboxSeconds  float64 // wall time, summed
	CPUSeconds      float64
	MemoryPeakBytes int64 // the highest of any one sandbox
	EgressBytesOut  int64
	EgressBytesIn   int64
	ExecCount       int64
	// MemoryGiBSeconds is each sandbox's memory limit times its wall
	// time, summed.
	MemoryGiBSeconds float64
	Model            ModelUsage
}

// SandboxFilter selects sandboxes in List. Zero fields match everything.
type SandboxFilter struct {
	TenantID  string            // always set by the API
	State     string            // exact state
	Metadata  map[string]string // every pair must match
	After     string            // pagination: ids sorted ascending, strictly after this one
	ExpiredBy time.Time         // expires_at at or before this time
	Limit     int               // 0 = no limit
}

// Store is everything the daemon persists. Implementations are safe for
// concurrent use.
type Store interface {
	CreateTenant(ctx context.Context, t tenancy.Tenant) error
	GetTenant(ctx context.Context, id string) (tenancy.Tenant, error)
	TenantByName(ctx context.Context, name string) (tenancy.Tenant, error)
	ListTenants(ctx context.Context) ([]tenancy.Tenant, error)
	// UpdateTenantQuota sets the quotas of the tenant with t.ID (its other
	// fields stay) and returns the tenant as stored.
	UpdateTenantQuota(ctx context.Context, t tenancy.Tenant) (tenancy.Tenant, error)

	CreateKey(ctx context.Context, k tenancy.Key) error
	KeyByHash(ctx context.Context, hash []byte) (tenancy.Key, error)
	ListKeys(ctx context.Context, tenantID string) ([]tenancy.Key, error) // "" = all
	DeleteKey(ctx context.Context, id string) error

	// CreateConsoleSession opens a console session for an existing key
	// (ErrNotFound if the key is gone); ConsoleSessionByHash returns it
	// with its key; DeleteConsoleSession ends it. Deleting a key ends its
	// sessions.
	CreateConsoleSession(ctx context.Context, cs tenancy.ConsoleSession) error
	ConsoleSessionByHash(ctx context.Context, hash []byte) (tenancy.ConsoleSession, tenancy.Key, error)
	DeleteConsoleSession(ctx context.Context, hash []byte) error

	CreateToken(ctx context.Context, t tenancy.Token) error
	TokenByHash(ctx context.Context, hash []byte) (tenancy.Token, error)
	DeleteTokens(ctx context.Context, sandboxID string) error

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
	ListSandboxes(ctx context.Context, f SandboxFilter) ([]Sandbox, error)
	// Usage counts a tenant's live (creating or running) sandboxes and
	// their memory, for quotas.
	Usage(ctx context.Context, tenantID string) (sandboxes int, memoryMB int64, err error)
	// NextExpiry is the earliest expiry after after of a running sandbox,
	// zero if there is none.
	NextExpiry(ctx context.Context, after time.Time) (time.Time, error)

	// AppendNetEvents adds events to their sandboxes' egress logs, in one
	// transaction; their IDs are assigned by the store.
	AppendNetEvents(ctx context.Context, events []NetEvent) error
	// NetEvents returns up to limit events of the sandbox with an ID above
	// after, oldest first.
	NetEvents(ctx context.Context, sandboxID string, after int64, limit int) ([]NetEvent, error)

	// CreateSecret inserts a secret; one with the same tenant and name is
	// ErrConflict.
	CreateSecret(ctx context.Context, s Secret) error
	// GetSecret returns the tenant's secret with the name, or ErrNotFound.
	GetSecret(ctx context.Context, tenantID, name string) (Secret, error)
	// ListSecrets returns the tenant's secrets ordered by name.
	ListSecrets(ctx context.Context, tenantID string) ([]Secret, error)
	// UpdateSecret replaces the hosts, inject, body, sealed value and
	// rotation time of the secret with s's tenant and name (its creation
	// time stays), or returns ErrNotFound.
	UpdateSecret(ctx context.Context, s Secret) error
	// DeleteSecret removes the tenant's secret with the name, or returns
	// ErrNotFound.
	DeleteSecret(ctx context.Context, tenantID, name string) error

	// AppendAudit adds linked events (audit.Link) to their sandboxes'
	// audit logs and moves each log's head, in one transaction.
	AppendAudit(ctx context.Context, events []audit.Event) error
	// AuditHead returns a log's newest sequence number and hash (0 and ""
	// when the sandbox has none).
	AuditHead(ctx context.Context, sandboxID string) (int64, string, error)
	// AuditOutputCapped says whether a log holds an audit.output_capped
	// event (false when the sandbox has none).
	AuditOutputCapped(ctx context.Context, sandboxID string) (bool, error)
	// AuditEvents returns a sandbox's audit events in order, filtered.
	AuditEvents(ctx context.Context, sandboxID string, f AuditFilter) ([]audit.Event, error)
	// PruneAudit deletes the logs whose newest event is older than before,
	// with those sandboxes' network logs, and returns how many went.
	PruneAudit(ctx context.Context, before time.Time) (int, error)

	// StorageBytes is what the store keeps for a tenant as its storage
	// quota counts it (audit and network logs, its event stream, tasks
	// with their events and artifacts): a count the writers keep in the
	// transactions that add and delete rows, so reading it costs no scan.
	StorageBytes(ctx context.Context, tenantID string) (int64, error)
	// StorageByTenant is StorageBytes of every tenant that keeps any.
	StorageByTenant(ctx context.Context) (map[string]int64, error)

	// SaveUsage writes sandboxes' usage in one transaction, inserting or
	// merging: counters only grow (each keeps the larger of the stored and
	// the new value) and a row once ended stays ended, so a late or
	// repeated write cannot undo a final one.
	SaveUsage(ctx context.Context, u []SandboxUsage) error
	// GetUsage returns one sandbox's usage, or ErrNotFound.
	GetUsage(ctx context.Context, sandboxID string) (SandboxUsage, error)
	// UsageByTenant sums the usage f selects per tenant, ordered by
	// tenant id; tenants without sandboxes there are left out.
	UsageByTenant(ctx context.Context, f UsageFilter) ([]TenantUsage, error)
	// CountSandboxes counts sandbox records by state.
	CountSandboxes(ctx context.Context) (map[string]int, error)
	// SaveIdle records when each sandbox was last used, which starts its
	// idle timer, for the daemon that runs after this one.
	SaveIdle(ctx context.Context, last map[string]time.Time) error
	// IdleSince returns the last use saved of each live (creating or
	// running) sandbox that has one.
	IdleSince(ctx context.Context) (map[string]time.Time, error)

	// AppendEvents stores tenant events in one transaction, setting each
	// one's ID (ascending, never reused), and creates the deliveries each
	// lists, to webhooks that still exist.
	AppendEvents(ctx context.Context, events []TenantEvent) error
	// TenantEvents returns up to limit of a tenant's events with an ID
	// above after, oldest first; with types, only those.
	TenantEvents(ctx context.Context, tenantID string, after int64, types []string, limit int) ([]TenantEvent, error)
	// PruneEvents deletes events older than before and all but the newest
	// keep (0: no count bound), except those a pending delivery needs,
	// and finished deliveries that ended before before. It returns how
	// many events went.
	PruneEvents(ctx context.Context, before time.Time, keep int) (int, error)
	// CreateWebhook inserts a webhook; an existing ID is ErrConflict.
	CreateWebhook(ctx context.Context, w Webhook) error
	// GetWebhook returns the tenant's webhook, or ErrNotFound.
	GetWebhook(ctx context.Context, tenantID, id string) (Webhook, error)
	// ListWebhooks returns a tenant's webhooks ("" = all) oldest first.
	ListWebhooks(ctx context.Context, tenantID string) ([]Webhook, error)
	// DeleteWebhook removes the tenant's webhook and its deliveries, or
	// returns ErrNotFound.
	DeleteWebhook(ctx context.Context, tenantID, id string) error
	// DueDeliveries returns up to limit pending deliveries due by now,
	// earliest first, with their webhook and event.
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// NextDelivery is the earliest time after after at which a pending
	// delivery is due, zero if there is none.
	NextDelivery(ctx context.Context, after time.Time) (time.Time, error)
	// RecordAttempt saves an attempt and the delivery's new state in one
	// transaction; ErrNotFound if the delivery is gone.
	RecordAttempt(ctx context.Context, d Delivery, a DeliveryAttempt) error
	// ListDeliveries returns up to limit deliveries of the tenant's
	// webhook for events below before (0: from the newest), newest first,
	// with their attempts.
	ListDeliveries(ctx context.Context, tenantID, webhookID string, before int64, limit int) ([]Delivery, error)

	// Tasks, their events and artifacts (tasks.go), whose records and
	// methods' contract are package taskrec's.
	taskrec.Store

	// Connections in flight (liveconns.go): UpdateLiveConns adds
	// and removes them in one transaction; TakeLiveConns returns those
	// left by a daemon that went away and forgets them.
	UpdateLiveConns(ctx context.Context, opened []LiveConn, closed []string) error
	TakeLiveConns(ctx context.Context) ([]LiveConn, error)

	// Snapshots and volumes (disks.go): CreateDisk inserts one and counts
	// its Bytes in its tenant's storage (an existing name of its kind is
	// ErrConflict); DeleteDisk removes it and its count (ErrNotFound if
	// none); ListDisks orders by tenant and name ("" tenant: all).
	CreateDisk(ctx context.Context, d Disk) error
	GetDisk(ctx context.Context, kind, tenantID, name string) (Disk, error)
	ListDisks(ctx context.Context, kind, tenantID string) ([]Disk, error)
	DeleteDisk(ctx context.Context, kind, tenantID, name string) error
	// MoveDisk records that the disk is kept on node now (ErrNotFound if
	// there is none).
	MoveDisk(ctx context.Context, kind, tenantID, name, node string) error

	// Approvals (approvals.go): CreateApproval inserts one (an existing id
	// is ErrConflict); GetApproval reads the tenant's (ErrNotFound for
	// another tenant's); ListApprovals returns the tenant's, of one state
	// unless state is "", oldest first; DecideApproval moves a pending one
	// to a.State with its decided_at, decided_by, reason and remember:
	// ErrConflict if it is no longer pending, ErrNotFound if the tenant
	// has none with that id. PruneApprovals deletes those decided before
	// before and those still pending whose deadline passed before it (a
	// daemon that died with them held), and says how many.
	CreateApproval(ctx context.Context, a approvals.Record) error
	GetApproval(ctx context.Context, tenantID, id string) (approvals.Record, error)
	ListApprovals(ctx context.Context, tenantID, state string) ([]approvals.Record, error)
	DecideApproval(ctx context.Context, a approvals.Record) error
	PruneApprovals(ctx context.Context, before time.Time) (int, error)

	Close() error
}
