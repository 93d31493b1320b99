package sandbox

import (
	"log/slog"
	"sync/atomic"
)

// batcher hands items to write in batches, from one goroutine, so those
// who add them never wait for the database: the egress proxy's events,
// the audit log.
type batcher[T any] struct {
	what    string
	log     *slog.Logger
	write   func([]T)
	block   bool // a full queue makes add wait (else it drops, counted)
	ch      chan T
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
}

const batchQueue = 8192

func newBatcher[T any](what string, log *slog.Logger, block bool, write func([]T)) *batcher[T] {
	b := &batcher[T]{what: what, log: log, write: write, block: block, ch: make(chan T, batchQueue),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// add queues v.
func (b *batcher[T]) add(v T) {
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

// flush returns once everything queued before the call is written.
func (b *batcher[T]) flush() {
	reply := make(chan struct{})
	select {
	case b.flushes <- reply:
		<-reply
	case <-b.done:
	}
}

func (b *batcher[T]) close() {
	close(b.stop)
	<-b.done
}

func (b *batcher[T]) run() {
	defer close(b.done)
	for {
		select {
		case v := <-b.ch:
			b.flushed(append([]T{v}, b.drain(255)...))
		case reply := <-b.flushes:
			b.flushed(b.drain(-1))
			close(reply)
		case <-b.stop:
			b.flushed(b.drain(-1))
			return
		}
	}
}

func (b *batcher[T]) flushed(batch []T) {
	if len(batch) > 0 {
		b.write(batch)
	}
}

// drain takes up to n queued items without waiting (n < 0: all).
func (b *batcher[T]) drain(n int) []T {
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
