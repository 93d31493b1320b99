package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

// Terminal is one client attached to a session's terminal. Several may be
// attached to one session at once; each reads the same output from its
// own place in the scrollback, and what any of them types goes to the
// shell. Detaching (Close) leaves the shell running.
type Terminal interface {
	// Next waits for more output: first what the scrollback still holds,
	// then what the terminal shows next. When the shell has ended, once
	// its output is read, exit says how; when the session or its sandbox
	// is gone, err says so. Neither ever hangs past the sandbox's end.
	Next(ctx context.Context) (out []byte, exit *ExecResult, err error)
	// Write types p into the terminal.
	Write(p []byte) (int, error)
	// Resize changes the terminal's size, for every attached client.
	Resize(cols, rows uint16) error
	// Close detaches.
	Close()
}

// Attach attaches a client to the terminal of se, a session of sandbox
// id, from offset on in its output (0: all the scrollback holds); rec
// records what the client does. Offsets count the bytes the terminal has
// shown since the session started, the same under any daemon that follows
// the shell: a client that lost its connection to a daemon that restarted
// goes on from where it was.
func (w *Work) Attach(id string, se *Session, offset int64, rec TerminalRecorder) (Terminal, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: offset %d: must be 0 or more", errdefs.ErrInvalid, offset)
	}
	// A daemon that has just adopted the shell may still be reading back
	// its output: wait a little for it to reach offset.
	for deadline := time.Now().Add(2 * time.Second); ; {
		_, end := se.tty.Span()
		_, done, _ := se.tty.Status()
		if offset <= end {
			break
		}
		if done || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: offset %d: session %s's terminal has shown %d bytes", errdefs.ErrInvalid, offset, se.id, end)
		}
		time.Sleep(20 * time.Millisecond)
	}
	se.attached.Add(1)
	return &terminal{w: w, id: id, se: se, rec: rec, off: offset, begun: offset > 0, release: w.host.Hold(id)}, nil
}

type terminal struct {
	w       *Work
	id      string
	se      *Session
	rec     TerminalRecorder // what this client types and its resizes
	off     int64
	begun   bool
	release func()
	once    sync.Once
}

// maxChunk bounds one piece of output handed to a client.
const maxChunk = 64 << 10

func (t *terminal) Next(ctx context.Context) ([]byte, *ExecResult, error) {
	for {
		v := t.se.tty.From(t.off)
		var out []byte
		if v.Dropped > 0 && t.begun {
			// This client fell behind by more than the scrollback.
			out = fmt.Appendf(out, "\r\n[airlock: %d bytes of output skipped]\r\n", v.Dropped)
		}
		for _, ch := range v.Chunks {
			if len(out) > 0 && len(out)+len(ch.Data) > maxChunk {
				break
			}
			out = append(out, ch.Data...)
			t.off = ch.Off + int64(len(ch.Data))
		}
		if len(v.Chunks) == 0 {
			t.off = v.Next
		}
		t.begun = true
		if len(out) > 0 {
			return out, nil, nil
		}
		if v.Done {
			if v.Ended.err != nil {
				return nil, nil, v.Ended.err
			}
			return nil, &v.Ended.exit, nil
		}
		select {
		case <-v.Wake:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (t *terminal) Write(p []byte) (int, error) {
	t.w.host.Touch(t.id)
	t.rec.Write(p)
	n, err := t.se.sh.Write(p)
	if err != nil {
		return n, fmt.Errorf("%w: session %s: the shell has ended", errdefs.ErrConflict, t.se.id)
	}
	return n, nil
}

func (t *terminal) Resize(cols, rows uint16) error {
	if err := ValidSize(cols, rows); err != nil {
		return err
	}
	size := runtime.TTYSize{Cols: cols, Rows: rows}
	if err := t.se.sh.Resize(size); err != nil {
		return fmt.Errorf("%w: resize session %s: %v", errdefs.ErrConflict, t.se.id, err)
	}
	t.se.mu.Lock()
	t.se.size = size
	t.se.mu.Unlock()
	t.rec.Resized(cols, rows)
	return nil
}

func (t *terminal) Close() {
	t.once.Do(func() {
		t.rec.Flush()
		t.se.attached.Add(-1)
		t.release()
	})
}
