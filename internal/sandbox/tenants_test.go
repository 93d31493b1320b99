package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Only tenants that exist are kept: one created after a miss is found at
// once, and a kept one is read again once its time is up.
func TestTenantCache(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t)
	var c tenantCache
	now := time.Unix(1000, 0)
	if _, err := c.get(ctx, st, "t1", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown tenant: err = %v, want ErrNotFound", err)
	}
	if err := st.CreateTenant(ctx, tenancy.Tenant{ID: "t1", Name: "one", MaxSandboxes: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := c.get(ctx, st, "t1", now)
	if err != nil || got.MaxSandboxes != 2 {
		t.Fatalf("tenant created after a miss: %+v, %v", got, err)
	}
	// Gone from the store (as if another daemon deleted it): still kept
	// within the TTL, read again after it.
	st.Close()
	if _, err := c.get(ctx, st, "t1", now.Add(tenantTTL-time.Second)); err != nil {
		t.Errorf("within the TTL: %v, want the kept tenant", err)
	}
	if _, err := c.get(ctx, st, "t1", now.Add(tenantTTL)); err == nil {
		t.Error("after the TTL: no error from a closed store, want a fresh read")
	}
}
