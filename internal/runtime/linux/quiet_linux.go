package linux

import (
	"sync/atomic"
	"time"
)

// activity counts the runtime's latency-bound operations in flight (a
// create, a command from its start until its exit is read, a destroy), so
// that a warm-pool refill can wait for a quiet moment (pool.fill). A
// refill boots a whole sandbox beside them: on this kind of host its
// page-table and namespace work slowed a claimant's first command from
// ~4.5 ms to 7-10 ms even at nice 19, since what it contends for (the
// hypervisor's shadow page tables, RCU grace periods, the kernel's locks)
// knows no priority.
type activity struct {
	n    atomic.Int64
	last atomic.Int64  // when the latest one ended, ns since the epoch
	done chan struct{} // signalled (never blocking) when one ends
}

func newActivity() *activity { return &activity{done: make(chan struct{}, 1)} }

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

// quietIn says how long until nothing will have been in flight for
// settle: 0 once that holds, what is left of settle after the latest
// end, and -1 while an operation is in flight (done says when one ends).
func (a *activity) quietIn(settle time.Duration) time.Duration {
	if a.n.Load() > 0 {
		return -1
	}
	return max(0, settle-time.Since(time.Unix(0, a.last.Load())))
}
