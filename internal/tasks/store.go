package tasks

import (
	"context"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Store is what the service persists through (store.Store has it): its
// own records' store, and what it reads of tenants and disks.
type Store interface {
	taskrec.Store
	// GetTenant reads the tenant's sandbox quota, which bounds how many
	// of its tasks run at once.
	GetTenant(ctx context.Context, id string) (tenancy.Tenant, error)
	// ListDisks finds kept workspaces (snapshots) to sweep; the disk
	// records are still store's.
	ListDisks(ctx context.Context, kind, tenantID string) ([]sandboxrec.Disk, error)
}
