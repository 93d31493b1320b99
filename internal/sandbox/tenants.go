package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/store"
)

// tenantTTL bounds how long a tenant read for a quota check is reused.
// Tenants are never changed or deleted (no route does either), so a kept
// one is never wrong today; the bound is for the day a route changes a
// tenant's quotas, through this daemon or another sharing the store.
const tenantTTL = 5 * time.Second

// tenantCacheMax bounds the cache; past it the cache starts over.
const tenantCacheMax = 4096

// tenantCache keeps tenants read by admit, so a create does not pay a
// store read for limits that do not change.
type tenantCache struct {
	mu sync.Mutex
	m  map[string]cachedTenant
}

type cachedTenant struct {
	t       store.Tenant
	fetched time.Time
}

// get returns the tenant with id from the cache or the store.
func (c *tenantCache) get(ctx context.Context, st store.Store, id string, now time.Time) (store.Tenant, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < tenantTTL && !now.Before(e.fetched) {
		return e.t, nil
	}
	t, err := st.GetTenant(ctx, id)
	if err != nil {
		return store.Tenant{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= tenantCacheMax {
		c.m = map[string]cachedTenant{}
	}
	c.m[id] = cachedTenant{t, now}
	return t, nil
}
