// Package store persists Airlock's records: tenants, API keys, sandboxes,
// sandbox tokens, tenant secrets, logs, usage, events and tasks, behind
// one interface that SQLite (the embedded default, store/sqlite) and
// PostgreSQL (store/postgres) implement. The records a domain package
// owns are that package's (tenancy, approvals, sandbox/sandboxrec,
// events/eventrec, tasks/taskrec), each with the narrow Store its owner
// persists through, which Store embeds; this package holds the records no
// other package owns yet, the row codecs both stores share, and no
// database of its own. It stores only hashes of credentials (keys,
// tokens) and only sealed (encrypted) tenant secrets, never a plaintext
// one, and it never decides policy: quotas and ownership are checked by
// its callers.
package store

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
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

	// Sandboxes and their disks (snapshots and volumes), whose records
	// and methods' contract are package sandboxrec's.
	sandboxrec.Store

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
	// SaveIdle records when each sandbox was last used, which starts its
	// idle timer, for the daemon that runs after this one.
	SaveIdle(ctx context.Context, last map[string]time.Time) error
	// IdleSince returns the last use saved of each live (creating or
	// running) sandbox that has one.
	IdleSince(ctx context.Context) (map[string]time.Time, error)

	// Tenant events, webhooks and their deliveries, whose records and
	// methods' contract are package eventrec's.
	eventrec.Store

	// Tasks, their events and artifacts (tasks.go), whose records and
	// methods' contract are package taskrec's.
	taskrec.Store

	// Connections in flight (liveconns.go): UpdateLiveConns adds
	// and removes them in one transaction; TakeLiveConns returns those
	// left by a daemon that went away and forgets them.
	UpdateLiveConns(ctx context.Context, opened []LiveConn, closed []string) error
	TakeLiveConns(ctx context.Context) ([]LiveConn, error)

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
