package live

import (
	"bytes"
	"strings"
)

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
