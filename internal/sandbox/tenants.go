package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/tenancy"
)

// tenantTTL bounds how long a tenant read for a quota check is reused.
// A quota change through this daemon drops its copy at once (Forget); the
// bound is for a change made through another daemon sharing the store.
const tenantTTL = 5 * time.Second

// tenantCacheMax bounds the cache; past it the cache starts over.
const tenantCacheMax = 4096

// tenantCache keeps tenants read by admit, so a create does not pay a
// store read for limits that do not change.
type tenantCache struct {
	mu  sync.Mutex
	m   map[string]cachedTenant
	gen uint64 // bumped by forget: a read from before it is not kept
}

type cachedTenant struct {
	t       tenancy.Tenant
	fetched time.Time
}

// get returns the tenant with id from the cache or the store.
func (c *tenantCache) get(ctx context.Context, st Store, id string, now time.Time) (tenancy.Tenant, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < tenantTTL && !now.Before(e.fetched) {
		return e.t, nil
	}
	t, err := st.GetTenant(ctx, id)
	if err != nil {
		return tenancy.Tenant{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return t, nil
	}
	if c.m == nil || len(c.m) >= tenantCacheMax {
		c.m = map[string]cachedTenant{}
	}
	c.m[id] = cachedTenant{t, now}
	return t, nil
}

// forget drops the cached copy of the tenant with id.
func (c *tenantCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, id)
}

// ForgetTenant drops what the service keeps of the tenant with id, so
// that quotas just changed in the store apply to the next create.
func (s *Service) ForgetTenant(id string) { s.tenants.forget(id) }
