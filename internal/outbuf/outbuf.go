// Package outbuf keeps the newest output of one process, bounded, for any
// number of readers at offsets of their own, and wakes readers that follow
// it. The daemon keeps one per background process and session; the agent
// keeps one per process it runs on its own, so that output written while
// no daemon was connected is still there when one comes back.
//
// Offsets count the bytes of every stream together, from the first byte
// the process wrote: one offset resumes a reader exactly, and a reader
// whose offset fell out of the buffer is told how many bytes it missed.
package outbuf

import (
	"io"
	"sync"
)

// chunkMax is the size up to which consecutive writes to one stream share
// a chunk: a process printing a byte at a time costs a byte per byte, not
// a chunk per byte.
const chunkMax = 32 << 10

// Chunk is a run of one stream's output starting at offset Off.
type Chunk struct {
	Off    int64
	Stream string
	Data   []byte
}

// Buffer is a process's output and, once it has ended, how it ended (E).
// At most max bytes are kept; the oldest go first.
type Buffer[E any] struct {
	mu     sync.Mutex
	room   sync.Cond // a held writer waits on it for readers to move on
	holds  map[*Hold[E]]struct{}
	chunks []Chunk
	start  int64 // offset of the oldest byte kept
	end    int64 // offset after the newest byte
	max    int64
	wake   chan struct{} // closed (and replaced) on every change
	done   bool
	ended  E
}

// New returns an empty buffer that keeps at most limit bytes (at least one).
func New[E any](limit int64) *Buffer[E] {
	b := &Buffer[E]{max: max(limit, 1), wake: make(chan struct{})}
	b.room.L = &b.mu
	return b
}

// Hold is a reader that keeps the buffer from dropping what it has not
// read yet: while it holds, a write that would drop bytes from its offset
// on waits until it moves on or lets go. That is how a writer is slowed
// to its slowest held reader (the process blocks on its full pipe, as it
// would writing to that reader itself), and how a reader that goes away
// stops slowing it.
type Hold[E any] struct {
	b   *Buffer[E]
	off int64 // guarded by b.mu
}

// Hold starts holding at offset off.
func (b *Buffer[E]) Hold(off int64) *Hold[E] {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &Hold[E]{b: b, off: off}
	if b.holds == nil {
		b.holds = map[*Hold[E]]struct{}{}
	}
	b.holds[h] = struct{}{}
	return h
}

// Advance says the reader has what came before off.
func (h *Hold[E]) Advance(off int64) {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if off > h.off {
		h.off = off
		h.b.room.Broadcast()
	}
}

// Release lets go: the buffer drops for this reader as for any other.
func (h *Hold[E]) Release() {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	delete(h.b.holds, h)
	h.b.room.Broadcast()
}

// held reports whether writing n more bytes would drop some a hold has
// not read, when that reader could make room by reading (one that has
// read everything cannot: a write larger than the buffer still drops).
// b.mu is held.
func (b *Buffer[E]) held(n int64) bool {
	keep := b.end + n - b.max // the offset the oldest kept byte would have
	for h := range b.holds {
		if h.off < keep && h.off < b.end {
			return true
		}
	}
	return false
}

func (b *Buffer[E]) changed() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// Write appends p, read as stream, and drops what no longer fits. Output
// after Finish is dropped.
func (b *Buffer[E]) Write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.done && b.held(int64(len(p))) {
		b.room.Wait()
	}
	if b.done {
		return
	}
	if n := len(b.chunks); n > 0 && b.chunks[n-1].Stream == stream && len(b.chunks[n-1].Data)+len(p) <= chunkMax {
		// Readers hold the chunk's bytes up to its old length only:
		// appending past it changes nothing they see.
		b.chunks[n-1].Data = append(b.chunks[n-1].Data, p...)
	} else {
		data := make([]byte, len(p), max(len(p), min(chunkMax, 4*len(p))))
		copy(data, p)
		b.chunks = append(b.chunks, Chunk{Off: b.end, Stream: stream, Data: data})
	}
	b.end += int64(len(p))
	if b.end-b.start > b.max {
		b.start = b.end - b.max
		for len(b.chunks) > 0 && b.chunks[0].Off+int64(len(b.chunks[0].Data)) <= b.start {
			b.chunks[0] = Chunk{}
			b.chunks = b.chunks[1:]
		}
		if c := &b.chunks[0]; c.Off < b.start {
			// A fresh copy: the cut-off head's memory goes with it.
			c.Data = append([]byte(nil), c.Data[b.start-c.Off:]...)
			c.Off = b.start
		}
	}
	b.changed()
}

// Skip moves the buffer on to offset to, as if the bytes up to it had been
// written and dropped: for a copy of output kept elsewhere that lost its
// oldest bytes before they were copied. Everything kept goes, and readers
// are told what they missed.
func (b *Buffer[E]) Skip(to int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if to <= b.end || b.done {
		return
	}
	clear(b.chunks)
	b.chunks = b.chunks[:0]
	b.start, b.end = to, to
	b.changed()
}

// Writer is stream's writer into the buffer; it never fails.
func (b *Buffer[E]) Writer(stream string) io.Writer { return streamWriter[E]{b, stream} }

type streamWriter[E any] struct {
	b      *Buffer[E]
	stream string
}

func (w streamWriter[E]) Write(p []byte) (int, error) {
	w.b.Write(w.stream, p)
	return len(p), nil
}

// Finish records how the process ended; only the first call counts, and
// it reports whether it was the first.
func (b *Buffer[E]) Finish(ended E) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return false
	}
	b.done, b.ended = true, ended
	b.changed()
	b.room.Broadcast()
	return true
}

// Status is the offset after the newest byte, whether the process ended,
// and how.
func (b *Buffer[E]) Status() (end int64, done bool, ended E) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end, b.done, b.ended
}

// Span is the offset of the oldest byte kept and the offset after the
// newest.
func (b *Buffer[E]) Span() (start, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.start, b.end
}

// View is what a reader at some offset can have now.
type View[E any] struct {
	Chunks  []Chunk // from the offset on (the first may be cut)
	Dropped int64   // bytes from the offset on that are no longer kept
	Next    int64   // the offset after what Chunks hold
	Done    bool
	Ended   E
	Wake    <-chan struct{} // closed at the next change
}

// From returns the output from off on. An off past the end gets nothing
// until the buffer reaches it.
func (b *Buffer[E]) From(off int64) View[E] {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := View[E]{Next: max(off, b.start), Done: b.done, Ended: b.ended, Wake: b.wake}
	if off < b.start {
		v.Dropped = b.start - off
	}
	for _, c := range b.chunks {
		cend := c.Off + int64(len(c.Data))
		if cend <= v.Next {
			continue
		}
		if c.Off < v.Next {
			c = Chunk{Off: v.Next, Stream: c.Stream, Data: c.Data[v.Next-c.Off:]}
		}
		v.Chunks = append(v.Chunks, c)
	}
	if b.end > v.Next {
		v.Next = b.end
	}
	return v
}
