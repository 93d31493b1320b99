package sandbox

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Store is what the service persists through (store.Store has it): its
// own records' store (sandboxes and their disks), and the logs, secrets
// and usage it keeps of them, which are still store's records.
type Store interface {
	sandboxrec.Store

	// GetTenant reads a tenant's quotas for creates and storage.
	GetTenant(ctx context.Context, id string) (tenancy.Tenant, error)

	// The audit logs (audit.go, audit_journal.go).
	AppendAudit(ctx context.Context, events []audit.Event) error
	AuditHead(ctx context.Context, sandboxID string) (int64, string, error)
	AuditOutputCapped(ctx context.Context, sandboxID string) (bool, error)
	AuditEvents(ctx context.Context, sandboxID string, f store.AuditFilter) ([]audit.Event, error)
	PruneAudit(ctx context.Context, before time.Time) (int, error)
	// PruneApprovals goes with the audit logs' retention.
	PruneApprovals(ctx context.Context, before time.Time) (int, error)
	StorageBytes(ctx context.Context, tenantID string) (int64, error)

	// The network logs (netlog.go).
	AppendNetEvents(ctx context.Context, events []store.NetEvent) error
	NetEvents(ctx context.Context, sandboxID string, after int64, limit int) ([]store.NetEvent, error)

	// Tenant secrets (secrets.go).
	CreateSecret(ctx context.Context, s store.Secret) error
	GetSecret(ctx context.Context, tenantID, name string) (store.Secret, error)
	ListSecrets(ctx context.Context, tenantID string) ([]store.Secret, error)
	UpdateSecret(ctx context.Context, s store.Secret) error
	DeleteSecret(ctx context.Context, tenantID, name string) error

	// Usage and idle timers (metering.go, idle.go).
	SaveUsage(ctx context.Context, u []store.SandboxUsage) error
	GetUsage(ctx context.Context, sandboxID string) (store.SandboxUsage, error)
	UsageByTenant(ctx context.Context, f store.UsageFilter) ([]store.TenantUsage, error)
	SaveIdle(ctx context.Context, last map[string]time.Time) error
	IdleSince(ctx context.Context) (map[string]time.Time, error)

	// Connections in flight (liveconns.go).
	UpdateLiveConns(ctx context.Context, opened []store.LiveConn, closed []string) error
	TakeLiveConns(ctx context.Context) ([]store.LiveConn, error)
}
