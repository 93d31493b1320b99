package linux

import (
	"sync/atomic"
	"time"
)

// activity counts the runtime's latency-bound operations in flight (a
// create, a command from its start until its exit is read, a destroy), so
// that a warm-pool refill can wait for a quiet moment. A refill boots a
// whole sandbox beside them: on this kind of host its page-table and
// namespace work slowed a claimant's first command from ~4.5 ms to 7-10
// ms even at nice 19, since what it contends for (the hypervisor's
// shadow page tables, RCU grace periods, the kernel's locks) knows no
// priority.
type activity struct {
	n    atomic.Int64
	last atomic.Int64     // when the latest one ended, ns since the epoch
	done chan struct{}    // signalled (never blocking) when one ends
	now  func() time.Time // time.Now; tests set it
}

func newActivity() *activity {
	return &activity{done: make(chan struct{}, 1), now: time.Now}
}

// begin marks an operation in flight; the returned func ends it (once).
func (a *activity) begin() func() {
	a.n.Add(1)
	var ended atomic.Bool
	return func() {
		if ended.Swap(true) {
			return
		}
		// last before the count: whoever sees 0 sees when it came.
		a.last.Store(time.Now().UnixNano())
		a.n.Add(-1)
		select {
		case a.done <- struct{}{}:
		default:
		}
	}
}

// waitQuiet returns once nothing has been in flight for settle (enough
// to bridge a caller's create and its first command, or its command and
// its destroy), after limit at the most, or when stop is closed.
func (a *activity) waitQuiet(stop <-chan struct{}, settle, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		now := time.Now()
		wait := deadline.Sub(now)
		if wait <= 0 {
			return
		}
		if a.n.Load() == 0 {
			idle := now.Sub(time.Unix(0, a.last.Load()))
			if idle >= settle {
				return
			}
			wait = min(wait, settle-idle)
		}
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-a.done:
			t.Stop()
		case <-t.C:
		}
	}
}
