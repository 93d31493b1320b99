package linux

import (
	"testing"
	"time"
)

// TestWaitQuiet: a refill waits while an operation is in flight and for
// the settle time after the last one ends, never past its limit, and not
// at all on a runtime that has been quiet.
func TestWaitQuiet(t *testing.T) {
	const settle = 50 * time.Millisecond
	a := newActivity()
	stop := make(chan struct{})

	start := time.Now()
	a.waitQuiet(stop, settle, time.Minute)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("quiet runtime: waited %v", d)
	}

	end := a.begin()
	done := make(chan time.Time)
	go func() { a.waitQuiet(stop, settle, time.Minute); done <- time.Now() }()
	select {
	case <-done:
		t.Fatal("returned while an operation was in flight")
	case <-time.After(3 * settle):
	}
	end()
	end() // a second end changes nothing
	ended := time.Now()
	if at := <-done; at.Sub(ended) < settle-5*time.Millisecond {
		t.Fatalf("returned %v after the end, want at least %v", at.Sub(ended), settle)
	}
	if n := a.n.Load(); n != 0 {
		t.Fatalf("in flight after the end: %d", n)
	}

	// In flight for good: the limit bounds the wait.
	defer a.begin()()
	start = time.Now()
	a.waitQuiet(stop, settle, 2*settle)
	if d := time.Since(start); d < 2*settle-5*time.Millisecond {
		t.Fatalf("returned after %v, before its limit", d)
	}

	// Closing stop ends the wait at once.
	go func() { a.waitQuiet(stop, settle, time.Hour); done <- time.Now() }()
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a closed stop did not end the wait")
	}
}
