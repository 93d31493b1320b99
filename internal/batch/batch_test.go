package batch

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

type sink struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{} // when set, write waits for it
}

func (s *sink) write(b []int) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, append([]int(nil), b...))
}

func (s *sink) all() (n int, items []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		items = append(items, b...)
	}
	return len(s.batches), items
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestLingerAndFlush: items added together go in one batch; Flush
// returns only once everything added before it is written, in order.
func TestLingerAndFlush(t *testing.T) {
	var s sink
	b := New("test", quiet, true, time.Hour, s.write)
	for i := range 10 {
		b.Add(i)
	}
	b.Flush()
	n, items := s.all()
	if n != 1 || len(items) != 10 || items[0] != 0 || items[9] != 9 {
		t.Fatalf("%d batches, items %v", n, items)
	}
	b.Add(10)
	b.Close()
	if _, items := s.all(); len(items) != 11 {
		t.Fatalf("Close did not write the rest: %v", items)
	}
	b.Flush() // after Close: returns at once
}

// TestLingerEnds: a lone item is written once the linger is over.
func TestLingerEnds(t *testing.T) {
	var s sink
	b := New("test", quiet, true, time.Millisecond, s.write)
	defer b.Close()
	b.Add(1)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, items := s.all(); len(items) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a lone item was not written within 5 s")
		}
	}
}

// TestFullQueue: without block, a full queue drops and counts; with it,
// Add waits until there is room, and nothing is lost.
func TestFullQueue(t *testing.T) {
	s := sink{gate: make(chan struct{})}
	b := New("test", quiet, false, 0, s.write)
	for i := range batchQueue + batchMax + 100 {
		b.Add(i)
	}
	if b.Dropped() == 0 {
		t.Error("nothing dropped with the writer stuck and the queue over-full")
	}
	close(s.gate)
	b.Close()

	s2 := sink{gate: make(chan struct{})}
	b2 := New("test", quiet, true, 0, s2.write)
	done := make(chan struct{})
	go func() {
		for i := range batchQueue + batchMax + 100 {
			b2.Add(i)
		}
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("Add did not wait with the queue full")
	case <-time.After(100 * time.Millisecond):
	}
	close(s2.gate)
	<-done
	b2.Close()
	if _, items := s2.all(); len(items) != batchQueue+batchMax+100 || b2.Dropped() != 0 {
		t.Errorf("blocking batcher wrote %d items, dropped %d", len(items), b2.Dropped())
	}
}

// TestSync: Sync returns only once what was added before it is written,
// cutting an hour's linger short; a writer busy with an earlier batch is
// waited for when it holds what Sync covers, and with nothing unwritten
// Sync does not reach the writer at all (its gate stays shut).
func TestSync(t *testing.T) {
	s := sink{gate: make(chan struct{})}
	b := New("test", quiet, true, time.Hour, s.write)
	defer b.Close()
	b.Add(1)
	synced := make(chan struct{})
	go func() { b.Sync(); close(synced) }()
	select {
	case <-synced:
		t.Fatal("Sync returned before the write")
	case <-time.After(50 * time.Millisecond):
	}
	s.gate <- struct{}{}
	<-synced
	if _, items := s.all(); len(items) != 1 {
		t.Fatalf("after Sync: %v", items)
	}
	b.Sync() // nothing unwritten: would block on the shut gate otherwise
	close(s.gate)
}
