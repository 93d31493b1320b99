package tenancy

import (
	"testing"
	"time"
)

func TestKeyCache(t *testing.T) {
	var c keyCache
	k := Key{ID: "k1", TenantID: "t1", Hash: []byte("h1")}
	now := t0
	if _, ok, _ := c.get(k.Hash, now); ok {
		t.Fatal("empty cache hit")
	}
	_, _, gen := c.get(k.Hash, now)
	c.put(k, gen, now)
	if got, ok, _ := c.get(k.Hash, now.Add(time.Second)); !ok || got.ID != "k1" {
		t.Fatalf("get after put = %+v, %v", got, ok)
	}
	if _, ok, _ := c.get(k.Hash, now.Add(keyCacheTTL)); ok {
		t.Error("hit past the TTL")
	}
	if _, ok, _ := c.get(k.Hash, now.Add(-time.Second)); ok {
		t.Error("hit with the clock moved back")
	}
	c.drop("k1")
	if _, ok, _ := c.get(k.Hash, now); ok {
		t.Error("hit after drop")
	}
}

// A lookup that read a key before it was deleted must not cache it after.
func TestKeyCacheDropDuringLookup(t *testing.T) {
	var c keyCache
	k := Key{ID: "k1", Hash: []byte("h1")}
	_, _, gen := c.get(k.Hash, t0) // miss: the caller goes to the store
	c.drop("k1")                   // meanwhile the key is deleted
	c.put(k, gen, t0)              // the stale read comes back
	if _, ok, _ := c.get(k.Hash, t0); ok {
		t.Error("a key deleted during its lookup was cached")
	}
}

func TestKeyCacheBounded(t *testing.T) {
	var c keyCache
	for i := range keyCacheMax + 10 {
		_, _, gen := c.get(nil, t0)
		c.put(Key{ID: "k", Hash: []byte{byte(i), byte(i >> 8), byte(i >> 16)}}, gen, t0)
	}
	if len(c.m) > keyCacheMax {
		t.Errorf("cache holds %d keys, max %d", len(c.m), keyCacheMax)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
