package linux

import (
	"testing"
	"time"
)

// TestQuietIn: a runtime is quiet once nothing has been in flight for
// the settle time; an operation in flight says to wait for its end, and
// its end is signalled.
func TestQuietIn(t *testing.T) {
	a := newActivity()
	if q := a.quietIn(time.Hour); q != 0 {
		t.Fatalf("a runtime that never did anything: quiet in %v, want 0", q)
	}
	end := a.begin()
	if q := a.quietIn(0); q != -1 {
		t.Fatalf("an operation in flight: quiet in %v, want -1 (wait for its end)", q)
	}
	other := a.begin()
	end()
	end() // a second end changes nothing
	if q := a.quietIn(0); q != -1 {
		t.Fatalf("one of two operations still in flight: quiet in %v, want -1", q)
	}
	select {
	case <-a.done:
	default:
		t.Fatal("an end was not signalled")
	}
	other()
	if q := a.quietIn(time.Hour); q <= 0 || q > time.Hour {
		t.Fatalf("just after the last end: quiet in %v, want most of an hour", q)
	}
	if q := a.quietIn(0); q != 0 {
		t.Fatalf("nothing in flight, no settle time: quiet in %v, want 0", q)
	}
}
