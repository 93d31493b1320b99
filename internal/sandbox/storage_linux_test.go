package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestExecOutputStopsAtStorageQuota: a command that prints more than its
// tenant's storage quota gets its output recorded up to the quota (the
// piece that reaches it included), then
// one audit.output_capped event (reason storage_quota); later commands
// are recorded without output, the chain verifies, the sandbox still
// runs commands and is deleted, and the tenant's next create is refused.
func TestExecOutputStopsAtStorageQuota(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	c := tenant(t, 0, 0)
	tn, err := shared.GetTenant(ctx, c.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	tn.MaxStorageMB = 1
	if _, err := shared.UpdateTenantQuota(ctx, tn); err != nil {
		t.Fatal(err)
	}
	sb := create(t, svc, c, sandbox.CreateRequest{})
	if res := run(t, svc, c, sb.ID, "head -c 3000000 /dev/zero | tr '\\0' a; echo done"); res.ExitCode != 0 {
		t.Fatalf("flood: %+v", res)
	}
	if res := run(t, svc, c, sb.ID, "echo after"); res.Stdout != "after\n" {
		t.Fatalf("a command after the cap: %+v", res)
	}
	var capped, started, exited int
	var why map[string]any
	for _, e := range auditEvents(t, svc, c, sb.ID) {
		switch e.Type {
		case audit.OutputCapped:
			capped++
			json.Unmarshal(e.Data, &why)
		case audit.ExecStarted:
			started++
		case audit.ExecExited:
			exited++
		}
	}
	out := outputOf(t, auditEvents(t, svc, c, sb.ID, audit.ExecOutput))
	if capped != 1 || why["reason"] != "storage_quota" || started != 2 || exited != 2 || len(out) > 1<<20+32<<10 || len(out) < 1<<19 {
		t.Errorf("capped %d (%v), started %d, exited %d, %d output bytes recorded", capped, why, started, exited, len(out))
	}
	if r, err := svc.VerifyAudit(ctx, c, sb.ID); err != nil || !r.OK {
		t.Errorf("verify: %+v %v", r, err)
	}
	// A create at the quota is refused. The count is the store's plus
	// what the audit log has queued; CI once saw one create let through
	// on PostgreSQL under load, so a create that gets through is undone
	// (its own events count too) and tried again, and said.
	for try := 1; ; try++ {
		sb, err := svc.Create(ctx, c, sandbox.CreateRequest{})
		if errors.Is(err, sandbox.ErrStorageQuota) {
			break
		}
		if err == nil {
			svc.Delete(ctx, c, sb.ID)
		}
		if try == 5 {
			t.Fatalf("create at the storage quota, %d times: %v", try, err)
		}
		t.Logf("create at the storage quota, try %d: %v", try, err)
		time.Sleep(200 * time.Millisecond)
	}
}
