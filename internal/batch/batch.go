// Package batch hands items to a writer in batches, from one goroutine,
// so those who add them never wait for the database: the egress proxy's
// events, the audit log, the tenant event stream.
package batch

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Batcher batches items for its write function. Create it with New,
// stop it with Close.
type Batcher[T any] struct {
	what    string
	log     *slog.Logger
	write   func([]T)
	block   bool // a full queue makes add wait (else it drops, counted)
	linger  time.Duration
	ch      chan T
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
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
	b := &Batcher[T]{what: what, log: log, write: write, block: block, linger: linger, ch: make(chan T, batchQueue),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// Add queues v.
func (b *Batcher[T]) Add(v T) {
	if b.block {
		select {
		case b.ch <- v:
		case <-b.done:
		}
		return
	}
	select {
	case b.ch <- v:
	default:
		if b.dropped.Add(1)%1000 == 1 {
			b.log.Error(b.what+" queue full: events dropped", "dropped", b.dropped.Load())
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

// Close writes what is queued and stops.
func (b *Batcher[T]) Close() {
	close(b.stop)
	<-b.done
}

func (b *Batcher[T]) run() {
	defer close(b.done)
	for {
		select {
		case v := <-b.ch:
			b.flushed(b.collect(v))
		case reply := <-b.flushes:
			b.flushed(b.drain(-1))
			close(reply)
		case <-b.stop:
			b.flushed(b.drain(-1))
			return
		}
	}
}

func (b *Batcher[T]) flushed(batch []T) {
	if len(batch) > 0 {
		b.write(batch)
	}
}

// collect gathers a batch that begins with first: what comes within the
// linger, up to batchMax. A flush or stop cuts the wait short.
func (b *Batcher[T]) collect(first T) []T {
	batch := append([]T{first}, b.drain(batchMax-1)...)
	if len(batch) >= batchMax || b.linger <= 0 {
		return batch
	}
	t := time.NewTimer(b.linger)
	defer t.Stop()
	for len(batch) < batchMax {
		select {
		case v := <-b.ch:
			batch = append(batch, v)
		case <-t.C:
			return batch
		case reply := <-b.flushes:
			// Written before the flush returns: everything queued.
			b.flushed(append(batch, b.drain(-1)...))
			close(reply)
			return nil
		case <-b.stop: // closed: run sees it next and drains the rest
			return batch
		}
	}
	return batch
}

// Dropped counts the items dropped on a full queue.
func (b *Batcher[T]) Dropped() int64 { return b.dropped.Load() }

// drain takes up to n queued items without waiting (n < 0: all).
func (b *Batcher[T]) drain(n int) []T {
	var out []T
	for n < 0 || len(out) < n {
		select {
		case v := <-b.ch:
			out = append(out, v)
		default:
			return out
		}
	}
	return out
}
