package outbuf

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func read[E any](b *Buffer[E], off int64) (string, View[E]) {
	v := b.From(off)
	var out bytes.Buffer
	next := max(off, 0) + v.Dropped
	for _, c := range v.Chunks {
		if c.Off != next {
			panic(fmt.Sprintf("chunk at %d, want %d", c.Off, next))
		}
		out.Write(c.Data)
		next += int64(len(c.Data))
	}
	return out.String(), v
}

func TestKeepsEverythingUnderTheBound(t *testing.T) {
	b := New[int](100)
	b.Write("stdout", []byte("ab"))
	b.Write("stderr", []byte("cd"))
	b.Write("stdout", []byte("ef"))
	got, v := read(b, 0)
	if got != "abcdef" || v.Dropped != 0 || v.Next != 6 || v.Done {
		t.Fatalf("got %q %+v", got, v)
	}
	if len(v.Chunks) != 3 || v.Chunks[1].Stream != "stderr" {
		t.Errorf("streams not kept apart: %+v", v.Chunks)
	}
	if got, _ := read(b, 3); got != "def" {
		t.Errorf("from 3: %q", got)
	}
}

// A process printing a byte at a time must not cost a chunk per byte.
func TestCoalescesSmallWrites(t *testing.T) {
	b := New[int](1 << 20)
	for range 10000 {
		b.Write("stdout", []byte("x"))
	}
	if n := len(b.chunks); n != 1 {
		t.Errorf("%d chunks for 10000 one-byte writes", n)
	}
}

// The bound is exact: the oldest bytes go, even from the middle of a
// chunk, and a reader is told how many it missed.
func TestDropsOldestExactly(t *testing.T) {
	b := New[int](10)
	b.Write("stdout", []byte("0123456789"))
	b.Write("stdout", []byte("abcd"))
	got, v := read(b, 0)
	if got != "456789abcd" || v.Dropped != 4 || v.Next != 14 {
		t.Fatalf("got %q dropped %d next %d", got, v.Dropped, v.Next)
	}
	b.Write("stderr", bytes.Repeat([]byte("z"), 25)) // one write over the bound
	got, v = read(b, 0)
	if got != "zzzzzzzzzz" || v.Dropped != 29 {
		t.Fatalf("got %q dropped %d", got, v.Dropped)
	}
	var kept int
	for _, c := range b.chunks {
		kept += len(c.Data)
	}
	if kept != 10 {
		t.Errorf("%d bytes kept, bound 10", kept)
	}
}

func TestFinishWakesAndEndsWrites(t *testing.T) {
	b := New[string](10)
	v := b.From(0)
	if !b.Finish("exit 7") || b.Finish("again") {
		t.Fatal("Finish must count once")
	}
	select {
	case <-v.Wake:
	default:
		t.Fatal("a follower was not woken")
	}
	b.Write("stdout", []byte("late"))
	end, done, how := b.Status()
	if end != 0 || !done || how != "exit 7" {
		t.Errorf("status %d %v %q", end, done, how)
	}
}

func TestOffsetPastTheEnd(t *testing.T) {
	b := New[int](10)
	b.Write("stdout", []byte("abc"))
	got, v := read(b, 5)
	if got != "" || v.Next != 5 || v.Dropped != 0 {
		t.Errorf("got %q %+v", got, v)
	}
}

// A copy that lost bytes before it could take them moves on past them,
// and a reader is told what it missed.
func TestSkip(t *testing.T) {
	b := New[int](10)
	b.Write("stdout", []byte("abc"))
	b.Skip(2) // behind the end: nothing
	b.Skip(100)
	b.Write("stdout", []byte("xyz"))
	got, v := read(b, 0)
	if got != "xyz" || v.Dropped != 100 || v.Next != 103 {
		t.Fatalf("got %q %+v", got, v)
	}
}

// A held reader slows the writer instead of losing output: a write that
// would drop what the hold has not read waits until it reads on; once it
// lets go, writes drop as for anyone else.
func TestHoldSlowsTheWriter(t *testing.T) {
	b := New[string](10)
	h := b.Hold(0)
	b.Write("stdout", []byte("0123456789")) // fills the buffer: no drop yet
	wrote := make(chan struct{})
	go func() {
		b.Write("stdout", []byte("abcd"))
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a write that drops what a hold has not read went through")
	case <-time.After(50 * time.Millisecond):
	}
	h.Advance(3) // not enough room for 4 bytes
	select {
	case <-wrote:
		t.Fatal("the write went through with 3 bytes of room for 4")
	case <-time.After(50 * time.Millisecond):
	}
	h.Advance(4)
	<-wrote
	if v := b.From(0); v.Dropped != 4 || v.Next != 14 {
		t.Fatalf("after the held reader read 4: dropped %d next %d", v.Dropped, v.Next)
	}
	// Caught up, a write larger than the buffer still goes through.
	h.Advance(14)
	b.Write("stdout", []byte("0123456789abcdef"))
	h.Release()
	b.Write("stdout", []byte("xyz")) // nobody holds: drops
	if start, end := b.Span(); end != 33 || start != 23 {
		t.Fatalf("span %d..%d", start, end)
	}
	// Finish ends a held wait.
	b2 := New[string](2)
	b2.Hold(0)
	b2.Write("stdout", []byte("ab"))
	done := make(chan struct{})
	go func() { b2.Write("stdout", []byte("c")); close(done) }()
	time.Sleep(20 * time.Millisecond)
	b2.Finish("over")
	<-done
}
