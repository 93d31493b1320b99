package sqlite

import (
	"maps"
	"sync"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// sandboxCache keeps the sandbox records this store wrote or read, so the
// point lookup that every request on a sandbox starts with does not reach
// SQLite. One daemon owns a database and every write to its sandboxes
// goes through this store, which updates the cache under the write lock,
// in the order of the writes. A lookup that read the database while a
// write happened does not fill the cache (gen), so it never holds a record
// older than the database's.
type sandboxCache struct {
	mu  sync.Mutex
	m   map[string]sandboxrec.Sandbox
	gen uint64 // bumped by every write
}

// sandboxCacheMax bounds the cache; past it the cache starts over.
const sandboxCacheMax = 8192

func (c *sandboxCache) get(id string) (sandboxrec.Sandbox, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sb, ok := c.m[id]
	if !ok {
		return sandboxrec.Sandbox{}, false, c.gen
	}
	return cloneSandbox(sb), true, c.gen
}

// fill caches sb, read from the database, unless a write happened since
// get returned gen.
func (c *sandboxCache) fill(sb sandboxrec.Sandbox, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen {
		c.setLocked(sb)
	}
}

// wrote records a write of sb (ok) or that the record with id is in an
// unknown state (!ok: dropped). Called with the store's write lock held.
func (c *sandboxCache) wrote(id string, sb sandboxrec.Sandbox, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if ok {
		c.setLocked(sb)
	} else {
		delete(c.m, id)
	}
}

func (c *sandboxCache) setLocked(sb sandboxrec.Sandbox) {
	if c.m == nil || len(c.m) >= sandboxCacheMax {
		c.m = map[string]sandboxrec.Sandbox{}
	}
	c.m[sb.ID] = cloneSandbox(sb)
}

// cloneSandbox copies sb's maps: callers may change the record they get.
func cloneSandbox(sb sandboxrec.Sandbox) sandboxrec.Sandbox {
	sb.Env, sb.Metadata = maps.Clone(sb.Env), maps.Clone(sb.Metadata)
	return sb
}

// stored is sb as a read of the database returns it: times in UTC at
// nanosecond precision without a monotonic reading, empty maps as nil.
func stored(sb sandboxrec.Sandbox) sandboxrec.Sandbox {
	sb.CreatedAt, sb.ExpiresAt, sb.EndedAt = store.FromNanos(store.ToNanos(sb.CreatedAt)), store.FromNanos(store.ToNanos(sb.ExpiresAt)), store.FromNanos(store.ToNanos(sb.EndedAt))
	if len(sb.Env) == 0 {
		sb.Env = nil
	}
	if len(sb.Metadata) == 0 {
		sb.Metadata = nil
	}
	return sb
}
