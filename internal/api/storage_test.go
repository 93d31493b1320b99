package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// TestTenantStorageQuota: max_storage_mb is the default 2048 when a
// create leaves it out, 0 (unlimited) when it says so, set alone by a
// PATCH, and shown by the listing.
func TestTenantStorageQuota(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, body string }{
		{"dflt", `{"name":"dflt"}`},
		{"unlimited", `{"name":"unlimited","max_storage_mb":0}`},
		{"small", `{"name":"small","max_sandboxes":2,"max_storage_mb":1}`},
	} {
		e.must(call{method: "POST", path: "/v1/tenants", cred: e.admin, body: tc.body}, 201, nil)
	}
	var ten tenancy.Tenant
	e.must(call{method: "PATCH", path: "/v1/tenants/small", cred: e.admin, body: `{"max_storage_mb":5}`}, 200, &ten)
	if ten.MaxStorageMB != 5 || ten.MaxSandboxes != 2 {
		t.Errorf("tenant after PATCH of its storage quota: %+v", ten)
	}
	var tl struct{ Tenants []tenancy.Tenant }
	e.must(call{method: "GET", path: "/v1/tenants", cred: e.admin}, 200, &tl)
	got := map[string]int64{}
	for _, tn := range tl.Tenants {
		got[tn.Name] = tn.MaxStorageMB
	}
	want := map[string]int64{"dflt": store.DefaultMaxStorageMB, "unlimited": 0, "small": 5}
	for name := range got {
		if _, ok := want[name]; !ok {
			delete(got, name)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("max_storage_mb by tenant (-want +got):\n%s", d)
	}
}
