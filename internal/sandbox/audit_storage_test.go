package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// storedLog reads a sandbox's whole log from the store.
func storedLog(t *testing.T, st store.Store, id string) []audit.Event {
	t.Helper()
	evs, err := st.AuditEvents(context.Background(), id, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestOutputStopsAtTenantStorageQuota: output a tenant's sandboxes pour
// out is recorded until the tenant keeps as much as its storage quota
// allows; then each of its sandboxes gets one audit.output_capped event
// saying why, and nothing more of its output, while the rest (command
// ends) is still recorded, every chain verifies, another tenant records
// on, and a restarted log does not start recording (or marking) again.
func TestOutputStopsAtTenantStorageQuota(t *testing.T) {
	st := teststore.Open(t)
	const quota = 1 << 20
	quotas := map[string]int64{"t-full": quota}
	newLog := func() *auditLog {
		return newAuditLog(st, slog.Default(), time.Now, DefaultAuditOutputCap, func(tenant string) int64 { return quotas[tenant] }, nil)
	}
	a := newLog()
	piece := bytes.Repeat([]byte("x"), recordPiece)
	pour := func(a *auditLog, sandbox, tenant string, pieces int) {
		r := auditor{a: a, sandbox: sandbox, tenant: tenant, actor: "k"}
		r.record(audit.ExecStarted, map[string]any{"exec_id": "ex-1"})
		for range pieces {
			r.output(audit.ExecOutput, map[string]any{"exec_id": "ex-1", "stream": "stdout"}, piece)
		}
		r.record(audit.ExecExited, map[string]any{"exec_id": "ex-1", "exit_code": 0})
	}
	pour(a, "sb-1", "t-full", 64) // 2 MiB into a 1 MiB quota
	pour(a, "sb-2", "t-full", 4)  // a second sandbox of the full tenant
	pour(a, "sb-3", "t-other", 64)
	a.Close()

	ctx := context.Background()
	used, _ := st.StorageBytes(ctx, "t-full")
	if used < quota || used > quota+2*(recordPiece+2048) {
		t.Errorf("tenant at quota keeps %d bytes; want its quota %d and at most a piece more", used, quota)
	}
	if p := a.pending.get("t-full"); p != 0 {
		t.Errorf("%d bytes still pending after the log closed", p)
	}
	for _, tc := range []struct {
		sandbox      string
		wantCapped   bool
		wantOutputAt int // pieces recorded at least
	}{
		{"sb-1", true, 20},
		{"sb-2", true, 0},
		{"sb-3", false, 64},
	} {
		evs := storedLog(t, st, tc.sandbox)
		var capped, outputs, exited int
		var why map[string]any
		for _, e := range evs {
			switch e.Type {
			case audit.OutputCapped:
				capped++
				json.Unmarshal(e.Data, &why)
			case audit.ExecOutput:
				outputs++
				if capped > 0 {
					t.Errorf("%s: output recorded after the marker (event %d)", tc.sandbox, e.Seq)
				}
			case audit.ExecExited:
				exited++
			}
		}
		if tc.wantCapped && (capped != 1 || why["reason"] != "storage_quota" || why["limit_bytes"] != float64(quota)) {
			t.Errorf("%s: %d markers, last %v; want one saying storage_quota with the quota", tc.sandbox, capped, why)
		}
		if !tc.wantCapped && capped != 0 {
			t.Errorf("%s: %d markers; want none", tc.sandbox, capped)
		}
		if outputs < tc.wantOutputAt || exited != 1 {
			t.Errorf("%s: %d output pieces, %d exits; want at least %d and 1", tc.sandbox, outputs, exited, tc.wantOutputAt)
		}
		seq, hash, _ := st.AuditHead(ctx, tc.sandbox)
		var v audit.Verifier
		for _, e := range evs {
			v.Add(e)
		}
		v.Head(seq, hash)
		if r := v.Result(); !r.OK {
			t.Errorf("%s: chain does not verify: %+v", tc.sandbox, r)
		}
	}

	// After a restart the capped log stays capped, without a second
	// marker, even with the quota lifted.
	quotas["t-full"] = 0
	b := newLog()
	pour(b, "sb-1", "t-full", 2)
	b.Close()
	var capped, outputs int
	for _, e := range storedLog(t, st, "sb-1") {
		switch e.Type {
		case audit.OutputCapped:
			capped++
		case audit.ExecOutput:
			if capped > 0 {
				outputs++
			}
		}
	}
	if capped != 1 || outputs != 0 {
		t.Errorf("after a restart: %d markers, %d pieces after the marker; want 1 and 0", capped, outputs)
	}
}
