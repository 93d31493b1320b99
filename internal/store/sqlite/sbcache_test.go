package sqlite

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// The cache answers as the database would: a second store on the same
// file (no cache yet) reads the same records, and callers cannot change
// the cached copy.
func TestSandboxCache(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if err := s.CreateTenant(ctx, tenancy.Tenant{ID: "ten_a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	local := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.FixedZone("X", 3600))
	sb := sandboxrec.Sandbox{ID: "sb-1", TenantID: "ten_a", State: sandboxrec.Creating, Template: "base", CPUs: 1, MemoryMB: 512,
		Env: map[string]string{}, Metadata: map[string]string{"k": "v"}, CreatedAt: local, ExpiresAt: time.Now()}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	same := func(step string) {
		t.Helper()
		other, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		want, err := other.GetSandbox(ctx, "sb-1")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetSandbox(ctx, "sb-1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: cached %+v\ndatabase %+v", step, got, want)
		}
	}
	same("after create")
	got, _ := s.GetSandbox(ctx, "sb-1")
	got.Metadata["k"] = "changed"
	same("after a caller changed its copy")

	got.State, got.Metadata = sandboxrec.Running, map[string]string{"k": "v2"}
	if err := s.UpdateSandbox(ctx, got); err != nil {
		t.Fatal(err)
	}
	same("after update")
	if err := s.UpdateSandbox(ctx, sandboxrec.Sandbox{ID: "sb-missing", TenantID: "ten_a"}); err == nil {
		t.Fatal("update of a missing sandbox succeeded")
	}
	if _, err := s.GetSandbox(ctx, "sb-missing"); err == nil {
		t.Fatal("a failed update made a record appear")
	}
	if err := s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: "sb-1", TenantID: "ten_a", State: sandboxrec.Failed}); err == nil {
		t.Fatal("duplicate create succeeded")
	}
	same("after a refused duplicate")
}
