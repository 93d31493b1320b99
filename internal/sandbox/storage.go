package sandbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// A tenant's storage quota (max_storage_mb) bounds what the server keeps
// for it: audit logs, network logs, its event stream, tasks with their
// events and artifacts. It guards against a tenant making the host keep
// without bound what its sandboxes print: three sandboxes streaming
// output grew the database by ~16 MB/s, for the 30 days of retention.
//
// The store counts each tenant's bytes as it writes and prunes; the audit
// log adds what it has queued and not yet written. Once a tenant has
// reached its quota, output is no longer recorded (each sandbox's log
// says so with one audit.output_capped event) and new sandboxes and tasks
// are refused. The rest is still recorded, and counts: lifecycle, API
// calls, command starts and ends, file transfers, network connections.
// Each of those costs the tenant a call or a connection, where output
// pours out at the speed of a pipe.

// pendingBytes is, per tenant, what the audit log has queued for the
// store and the store has not counted yet. It has a lock of its own: the
// writer goroutine takes it while a recorder that waits for room in the
// queue holds the log's.
type pendingBytes struct {
	mu sync.Mutex
	m  map[string]int64
}

func (p *pendingBytes) add(tenant string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]int64{}
	}
	if p.m[tenant] += n; p.m[tenant] == 0 {
		delete(p.m, tenant)
	}
}

func (p *pendingBytes) get(tenant string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[tenant]
}

// written takes a batch the store has had (stored or lost) off pending.
func (p *pendingBytes) written(events []audit.Event) {
	sums := map[string]int64{}
	for _, e := range events {
		sums[e.Tenant] += store.AuditEventBytes(e)
	}
	for tenant, n := range sums {
		p.add(tenant, -n)
	}
}

// storageUsed is what the tenant keeps, counting what the audit log is
// about to write.
func (a *auditLog) storageUsed(tenant string) int64 {
	n, err := a.st.StorageBytes(context.Background(), tenant)
	if err != nil {
		a.log.Error("storage of tenant", "tenant", tenant, "err", err)
	}
	return n + a.pending.get(tenant)
}

// storageQuota is the tenant's storage quota in bytes, 0 for none (or
// when the tenant cannot be read: recording goes on, and the error is
// logged).
func (s *Service) storageQuota(tenant string) int64 {
	t, err := s.tenants.get(context.Background(), s.st, tenant, s.now())
	if err != nil {
		s.log.Error("storage quota of tenant", "tenant", tenant, "err", err)
		return 0
	}
	return t.MaxStorageMB << 20
}

// checkStorage refuses a new sandbox (or task) of a tenant that keeps as
// much as its storage quota allows.
func (s *Service) checkStorage(t tenancy.Tenant) error {
	if t.MaxStorageMB <= 0 {
		return nil
	}
	quota := t.MaxStorageMB << 20
	used := s.audit.storageUsed(t.ID)
	if used < quota {
		return nil
	}
	return storageQuotaError(fmt.Sprintf("tenant %s keeps %s of its %s storage quota (audit and network logs, events, tasks): "+
		"new sandboxes are refused until old records pass their retention or an admin raises max_storage_mb",
		t.Name, FormatBytes(used), FormatBytes(quota)))
}

// FormatBytes is a byte count in binary units, for messages and tables.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v, i = v/unit, i+1
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
