package linux

import (
	"context"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// TestSpawnersTakeAFreeOne: a create does not wait for a busy spawner
// while another is free, and the warm pool's refills use a spawner of
// their own, never one a create could be waiting for.
func TestSpawnersTakeAFreeOne(t *testing.T) {
	r := poolRuntime(t, 1) // torn down after the held spawner is let go
	for deadline := time.Now().Add(time.Minute); r.PoolReady() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool never filled (%d boot errors, last: %v)", r.pool.errs, r.pool.lastErr)
		}
	}
	ss := r.spawner
	if len(ss.all) < 2 {
		t.Fatalf("%d spawners for creates, want at least 2", len(ss.all))
	}
	started := func(s *spawner) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cmd != nil
	}
	if !started(ss.idle) || started(ss.all[0]) {
		t.Fatalf("after the pool filled: refill spawner started %v, first create spawner %v; want true, false", started(ss.idle), started(ss.all[0]))
	}

	// The first spawner busy (held, as a spawn in progress holds it): a
	// create that misses the pool takes the next one.
	ss.all[0].mu.Lock()
	held := true
	defer func() {
		if held {
			ss.all[0].mu.Unlock()
		}
	}()
	done := make(chan error, 2)
	for i := range 2 { // the first claims the pooled sandbox, the second boots
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb, err := r.Create(ctx, runtime.Spec{ID: "spawners-" + string(rune('a'+i))})
			if err == nil {
				err = sb.Destroy(context.Background())
			}
			done <- err
		}()
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a create waited for the busy spawner while another was free")
		}
	}
	ss.all[0].mu.Unlock()
	held = false
	if !started(ss.all[1]) || started(ss.all[0]) {
		t.Fatalf("second create spawner started %v, the busy one %v; want true, false", started(ss.all[1]), started(ss.all[0]))
	}
}
