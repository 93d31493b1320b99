package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// fill makes the store keep n bytes more for the tenant (its network log).
func fill(t *testing.T, st store.Store, tenant string, n int) {
	t.Helper()
	if err := st.AppendNetEvents(context.Background(), []store.NetEvent{
		{SandboxID: "sb-old", TenantID: tenant, Time: time.Now(), Data: make([]byte, n)}}); err != nil {
		t.Fatal(err)
	}
}

// TestCreateRefusedAtStorageQuota: a tenant that keeps as much as its
// storage quota allows gets ErrStorageQuota (a limit, but not the tenant
// quota a queued task waits out) for a new sandbox and for a task's
// check, with its usage and quota in the message; another tenant and a
// raised quota create again.
func TestCreateRefusedAtStorageQuota(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{HostCPUs: 2})
	ctx := context.Background()
	full := addTenant(t, st, "full", 0, 0)
	other := addTenant(t, st, "other", 0, 0)
	for _, id := range []string{full.TenantID, other.TenantID} {
		tn, _ := st.GetTenant(ctx, id)
		tn.MaxStorageMB = 1
		if _, err := st.UpdateTenantQuota(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, st, full.TenantID, 1<<20)

	_, err := svc.Create(ctx, full, sandbox.CreateRequest{})
	if !errors.Is(err, sandbox.ErrStorageQuota) || !errors.Is(err, sandbox.ErrLimitExceeded) || errors.Is(err, sandbox.ErrTenantQuota) {
		t.Fatalf("create at the storage quota: %v; want ErrStorageQuota, not ErrTenantQuota", err)
	}
	for _, want := range []string{"tenant full keeps 1.0 MiB", "1.0 MiB storage quota", "max_storage_mb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if err := svc.Check(ctx, full, sandbox.CreateRequest{}); !errors.Is(err, sandbox.ErrStorageQuota) {
		t.Errorf("check (a task's submit) at the storage quota: %v", err)
	}
	if l, _ := st.ListSandboxes(ctx, sandboxrec.Filter{TenantID: full.TenantID}); len(l) != 0 || rt.creates.Load() != 0 {
		t.Errorf("refused create left %d records, made %d runtime calls", len(l), rt.creates.Load())
	}
	if _, err := svc.Create(ctx, other, sandbox.CreateRequest{}); err != nil {
		t.Errorf("another tenant's create: %v", err)
	}
	tn, _ := st.GetTenant(ctx, full.TenantID)
	tn.MaxStorageMB = 0
	if _, err := st.UpdateTenantQuota(ctx, tn); err != nil {
		t.Fatal(err)
	}
	svc.ForgetTenant(full.TenantID)
	if _, err := svc.Create(ctx, full, sandbox.CreateRequest{}); err != nil {
		t.Errorf("create once the quota is lifted: %v", err)
	}
}

// TestCreateRefusedOnLowDisk: below the free share of the data dir's
// filesystem the operator keeps, creates and a task's check get
// ErrLowDisk (unavailable) naming the dir, the free space and the flag,
// and nothing is stored or started.
func TestCreateRefusedOnLowDisk(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		minPct float64
		want   error
	}{
		{"no guard", 0, nil},
		{"a minimum the disk has", 0.0001, nil},
		{"a minimum no disk has", 100, sandbox.ErrLowDisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newStub()
			svc, st := stubService(t, rt, sandbox.Options{HostCPUs: 2, DataDir: dir, MinFreeDiskPercent: tc.minPct})
			c := addTenant(t, st, "a", 0, 0)
			_, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
			cerr := svc.Check(context.Background(), c, sandbox.CreateRequest{})
			if tc.want == nil {
				if err != nil || cerr != nil {
					t.Fatalf("create: %v, check: %v", err, cerr)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, sandbox.ErrUnavailable) || !errors.Is(cerr, tc.want) {
				t.Fatalf("create: %v, check: %v; want %v", err, cerr, tc.want)
			}
			for _, want := range []string{dir, "free of", "--min-free-disk"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
			if l, _ := st.ListSandboxes(context.Background(), sandboxrec.Filter{}); len(l) != 0 || rt.creates.Load() != 0 {
				t.Errorf("refused create left %d records, made %d runtime calls", len(l), rt.creates.Load())
			}
		})
	}
}

// TestUsageReportsStorage: GET /v1/usage gives each tenant's line what
// the server keeps for it now, whatever the window.
func TestUsageReportsStorage(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{HostCPUs: 2})
	ctx := context.Background()
	admin := addTenant(t, st, "root", 0, 0)
	admin.Admin = true
	busy := addTenant(t, st, "busy", 0, 0)
	quiet := addTenant(t, st, "quiet", 0, 0)
	if _, err := svc.Create(ctx, busy, sandbox.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	fill(t, st, quiet.TenantID, 5000)

	got := map[string]int64{}
	for _, q := range []sandbox.UsageQuery{{}, {TenantID: quiet.TenantID}} {
		rep, err := svc.Usage(ctx, admin, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range rep.Tenants {
			got[u.TenantID] = u.StorageBytes
		}
	}
	// busy keeps its sandbox's audit log (sandbox.created), quiet its
	// network log, though it created no sandbox.
	if got[busy.TenantID] <= 0 || got[quiet.TenantID] < 5000 {
		t.Errorf("storage by tenant %v; want both tenants with bytes", got)
	}
	own, err := svc.Usage(ctx, quiet, sandbox.UsageQuery{})
	if err != nil || len(own.Tenants) != 1 || own.Tenants[0].StorageBytes != got[quiet.TenantID] {
		t.Errorf("a tenant's own report: %+v, %v", own, err)
	}
}
