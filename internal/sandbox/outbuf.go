package sandbox

import (
	"sync"
	"time"
)

// ProcOutputCap bounds the output kept per background process; the oldest
// is dropped first and readers asking for it are told so.
const ProcOutputCap = 4 << 20

// chunk is one write of a background process's output. Offsets count the
// bytes of both streams together, so one offset resumes a reader exactly.
type chunk struct {
	off    int64
	stream string // "stdout" or "stderr"
	data   []byte
}

// outBuf keeps the newest output of one process and wakes readers that
// follow it.
type outBuf struct {
	mu     sync.Mutex
	chunks []chunk
	start  int64 // offset of the oldest byte kept
	end    int64 // offset after the newest byte
	max    int64
	wake   chan struct{} // closed (and replaced) on every change
	done   bool
	exit   ExecResult
	err    error // set when the process was lost (sandbox gone) rather than exited
	ended  time.Time
}

func newOutBuf(max int64) *outBuf { return &outBuf{max: max, wake: make(chan struct{})} }

func (b *outBuf) changed() {
	close(b.wake)
	b.wake = make(chan struct{})
}

func (b *outBuf) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chunks = append(b.chunks, chunk{off: b.end, stream: stream, data: append([]byte(nil), p...)})
	b.end += int64(len(p))
	for b.end-b.start > b.max && len(b.chunks) > 1 {
		b.start += int64(len(b.chunks[0].data))
		b.chunks[0] = chunk{}
		b.chunks = b.chunks[1:]
	}
	b.changed()
}

func (b *outBuf) finish(res ExecResult, err error, ended time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done, b.exit, b.err, b.ended = true, res, err, ended
	b.changed()
}

// finishedWith returns the error the buffer was finished with, if any.
func (b *outBuf) finishedWith() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// view is what a reader at some offset can have now.
type view struct {
	chunks  []chunk // from the offset on (the first may be cut)
	dropped int64   // bytes before the oldest kept that the reader missed
	next    int64   // the offset after what chunks hold
	done    bool
	exit    ExecResult
	err     error
	wake    <-chan struct{}
}

func (b *outBuf) from(off int64) view {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := view{next: max(off, b.start), done: b.done, exit: b.exit, err: b.err, wake: b.wake}
	if off < b.start {
		v.dropped = b.start - off
	}
	for _, c := range b.chunks {
		cend := c.off + int64(len(c.data))
		if cend <= v.next {
			continue
		}
		if c.off < v.next {
			c = chunk{off: v.next, stream: c.stream, data: c.data[v.next-c.off:]}
		}
		v.chunks = append(v.chunks, c)
	}
	if b.end > v.next {
		v.next = b.end
	}
	return v
}

// streamWriter feeds one stream of a process into its buffer.
type streamWriter struct {
	b      *outBuf
	stream string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.b.write(w.stream, p)
	return len(p), nil
}
