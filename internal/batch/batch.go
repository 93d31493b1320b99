// Package batch hands items to a writer in batches, from one goroutine,
// so those who add them never wait for the database: the egress proxy's
// events, the audit log, the tenant event stream.
package batch

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Batcher batches items for its write function. Create it with New,
// stop it with Close.
type Batcher[T any] struct {
	what   string
	log    *slog.Logger
	write  func([]T)
	block  bool // a full queue makes add wait (else it drops, counted)
	linger time.Duration

	mu     sync.Mutex
	queue  []T
	room   *sync.Cond // signalled (on mu) when the writer takes from a full queue
	closed bool

	// wake tells the writer that the queue went from empty to not (or
	// reached batchMax): one wake-up per batch, not per item, so that a
	// request recording several items does not hand the CPU to the writer
	// goroutine for each.
	wake    chan struct{}
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
	// added counts the items queued (under mu); written those written
	// (by the writer, after its write): Sync compares them.
	added   int64
	written atomic.Int64
}

const (
	batchQueue = 8192
	batchMax   = 256
)

// Linger is how long a batch waits for more after its first item: the
// events of one request then go in one transaction instead of several,
// each taking the store's write lock from the requests that wait for it.
// Readers Flush first, so nobody reads a stale log.
const Linger = 5 * time.Millisecond

// New starts a batcher named what (for logs). With block, a full queue
// makes Add wait; without, it drops the item (counted, logged). linger is
// how long a batch waits for more after its first item (0: not at all).
func New[T any](what string, log *slog.Logger, block bool, linger time.Duration, write func([]T)) *Batcher[T] {
	b := &Batcher[T]{what: what, log: log, write: write, block: block, linger: linger, wake: make(chan struct{}, 1),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	b.room = sync.NewCond(&b.mu)
	go b.run()
	return b
}

// Add queues v. After Close it drops v.
func (b *Batcher[T]) Add(v T) {
	b.mu.Lock()
	for b.block && len(b.queue) >= batchQueue && !b.closed {
		b.room.Wait()
	}
	if b.closed {
		b.mu.Unlock()
		return
	}
	if len(b.queue) >= batchQueue {
		b.mu.Unlock()
		if b.dropped.Add(1)%1000 == 1 {
			b.log.Error(b.what+" queue full: events dropped", "dropped", b.dropped.Load())
		}
		return
	}
	b.queue = append(b.queue, v)
	b.added++
	n := len(b.queue)
	b.mu.Unlock()
	if n == 1 || n == batchMax {
		select {
		case b.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// Flush returns once everything queued before the call is written.
func (b *Batcher[T]) Flush() {
	reply := make(chan struct{})
	select {
	case b.flushes <- reply:
		<-reply
	case <-b.done:
	}
}

// Sync returns once every item added before the call is written: at
// once when all are (no round trip to the writer), else as a Flush,
// which cuts the linger short.
func (b *Batcher[T]) Sync() {
	b.mu.Lock()
	target := b.added
	b.mu.Unlock()
	if b.written.Load() >= target {
		return
	}
	b.Flush()
}

// Close writes what is queued and stops. Adds waiting for room return.
func (b *Batcher[T]) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stop)
		b.room.Broadcast()
	}
	b.mu.Unlock()
	<-b.done
}

func (b *Batcher[T]) run() {
	defer close(b.done)
	for {
		select {
		case <-b.wake:
			// What is left after a batch is a new batch (with its own
			// linger) that no Add will wake us for.
			for b.lingered() && b.flushed(b.take(batchMax)) {
			}
		case reply := <-b.flushes:
			b.flushed(b.take(-1))
			close(reply)
		case <-b.stop:
			b.flushed(b.take(-1))
			return
		}
	}
}

// lingered waits up to the linger for the queue to reach batchMax. It
// reports false when a flush cut it short (and wrote everything) or the
// batcher is stopping (run writes the rest): the caller has nothing to do.
func (b *Batcher[T]) lingered() bool {
	if b.linger <= 0 {
		return true
	}
	t := time.NewTimer(b.linger)
	defer t.Stop()
	for {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n >= batchMax {
			return true
		}
		select {
		case <-t.C:
			return true
		case <-b.wake: // reached batchMax, or refilled after a flush
		case reply := <-b.flushes:
			// Written before the flush returns: everything queued.
			b.flushed(b.take(-1))
			close(reply)
			return false
		case <-b.stop:
			return false
		}
	}
}

// flushed writes batch, if not empty, and reports whether more is queued.
func (b *Batcher[T]) flushed(batch []T) bool {
	if len(batch) > 0 {
		b.write(batch)
		b.written.Add(int64(len(batch)))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) > 0
}

// take removes up to n queued items (n < 0: all) and makes room for Adds
// waiting on a full queue.
func (b *Batcher[T]) take(n int) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || n > len(b.queue) {
		n = len(b.queue)
	}
	out := b.queue[:n:n]
	if n == len(b.queue) {
		b.queue = nil
	} else {
		b.queue = b.queue[n:]
	}
	b.room.Broadcast()
	return out
}

// Dropped counts the items dropped on a full queue.
func (b *Batcher[T]) Dropped() int64 { return b.dropped.Load() }
