package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"github.com/airlockhq/airlock/internal/audit"
	"strings"
	"sync"
	"time"

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

// AttachSession attaches a client to a session's terminal, from offset on
// in its output (0: all the scrollback holds). Offsets count the bytes the
// terminal has shown since the session started, the same under any daemon
// that follows the shell: a client that lost its connection to a daemon
// that restarted goes on from where it was.
func (s *Service) AttachSession(ctx context.Context, c Caller, id, sid string, offset int64) (Terminal, error) {
	se, err := s.session(ctx, c, id, sid)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("%w: offset %d: must be 0 or more", ErrInvalid, offset)
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
			return nil, fmt.Errorf("%w: offset %d: session %s's terminal has shown %d bytes", ErrInvalid, offset, sid, end)
		}
		time.Sleep(20 * time.Millisecond)
	}
	se.attached.Add(1)
	r := s.auditor(c, id, c.TenantID)
	in := r.outRecorder(audit.SessionInput, s.scrubber(id), map[string]any{"session_id": sid})
	return &terminal{s: s, id: id, se: se, r: r, in: in, off: offset, begun: offset > 0, release: s.idle.hold(id, s.now)}, nil
}

type terminal struct {
	s       *Service
	id      string
	se      *session
	r       auditor
	in      *outRecorder // what this client types, into the audit log
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
	t.s.idle.touch(t.id, t.s.now())
	t.in.Write(p)
	n, err := t.se.sh.Write(p)
	if err != nil {
		return n, fmt.Errorf("%w: session %s: the shell has ended", ErrConflict, t.se.id)
	}
	return n, nil
}

func (t *terminal) Resize(cols, rows uint16) error {
	if err := validSize(cols, rows); err != nil {
		return err
	}
	size := runtime.TTYSize{Cols: cols, Rows: rows}
	if err := t.se.sh.Resize(size); err != nil {
		return fmt.Errorf("%w: resize session %s: %v", ErrConflict, t.se.id, err)
	}
	t.se.mu.Lock()
	t.se.size = size
	t.se.mu.Unlock()
	t.r.record(audit.SessionResized, map[string]any{"session_id": t.se.id, "cols": cols, "rows": rows})
	return nil
}

func (t *terminal) Close() {
	t.once.Do(func() {
		t.in.flush()
		t.se.attached.Add(-1)
		t.release()
	})
}

// markFilter takes an exec-mode shell's start and end markers out of
// what watchers see (and gives their nonces, with "-status" for an end), and turns its bare line feeds (the terminal is set -onlcr so
// output comes back byte for byte) into what a terminal needs. A marker
// cut across two writes is held back until it is whole.
type markFilter struct {
	pending []byte
	cr      bool // the last byte handed out was a CR
}

const markPrefix = "\x1eAIRLOCK-"

func (f *markFilter) filter(p []byte) (out []byte, marks []string) {
	buf := append(f.pending, p...)
	f.pending = nil
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, 0x1e)
		if i < 0 {
			out = append(out, buf...)
			break
		}
		out = append(out, buf[:i]...)
		buf = buf[i:]
		if n := markerLen(buf); n > 0 {
			m := string(buf[len(markPrefix):n])
			marks = append(marks, strings.TrimRight(m, "\x1f\n"))
			buf = buf[n:]
			continue
		} else if n < 0 {
			f.pending = bytes.Clone(buf)
			break
		}
		out = append(out, buf[0])
		buf = buf[1:]
	}
	if len(out) == 0 {
		return out, marks
	}
	// A CR LF cut between two writes is not a bare line feed.
	if f.cr && out[0] == '\n' {
		out = append([]byte{'\n'}, crlf(out[1:])...)
	} else {
		out = crlf(out)
	}
	f.cr = out[len(out)-1] == '\r'
	return out, marks
}

// markerLen returns the length of the marker b starts with, 0 when it
// starts with none, or -1 when it may be the start of one cut short.
func markerLen(b []byte) int {
	n := min(len(b), len(markPrefix))
	if string(b[:n]) != markPrefix[:n] {
		return 0
	}
	for i := n; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x1f:
			if i+1 == len(b) {
				return -1 // its line feed may come in the next write
			}
			if b[i+1] == '\n' {
				return i + 2
			}
			return i + 1
		case c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f':
		default:
			return 0
		}
		if i > 64 {
			return 0
		}
	}
	return -1
}

// crlf turns bare line feeds into CR LF.
func crlf(b []byte) []byte {
	if bytes.IndexByte(b, '\n') < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}
