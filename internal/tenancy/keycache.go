package tenancy

import (
	"sync"
	"time"
)

// keyCacheTTL bounds how long a key deleted by another daemon sharing the
// store keeps working here. A key deleted through this daemon stops at
// once: DeleteKey drops it.
const keyCacheTTL = 5 * time.Second

// keyCacheMax bounds the cache; past it the cache starts over.
const keyCacheMax = 4096

// keyCache remembers API keys found by hash, so a request does not pay a
// store lookup for its credential. Only keys that exist are cached: an
// unknown credential always reaches the store, and a new key works at once.
type keyCache struct {
	mu  sync.Mutex
	m   map[string]cachedKey // by hash
	gen uint64               // bumped by every drop
}

type cachedKey struct {
	key     Key
	fetched time.Time
}

// get returns the cached key for hash if it is fresh, and the generation
// to pass to put after a store lookup.
func (c *keyCache) get(hash []byte, now time.Time) (Key, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[string(hash)]
	if ok && now.Sub(e.fetched) < keyCacheTTL && !now.Before(e.fetched) {
		return e.key, true, c.gen
	}
	return Key{}, false, c.gen
}

// put caches k unless a drop happened since get returned gen: the lookup
// may have read a key that was deleted meanwhile.
func (c *keyCache) put(k Key, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= keyCacheMax {
		c.m = map[string]cachedKey{}
	}
	c.m[string(k.Hash)] = cachedKey{k, now}
}

// drop forgets the key with id, after it was deleted.
func (c *keyCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.m {
		if e.key.ID == id {
			delete(c.m, h)
		}
	}
}
