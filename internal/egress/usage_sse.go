package egress

import "bytes"

// maxUsageBody bounds what the proxy keeps of an answer to read its
// usage: a JSON body, one element of a JSON array, or one server-sent
// event. Past it the usage is unreadable; the bytes still pass.
const maxUsageBody = 8 << 20

// sseReader splits a server-sent event stream (WHATWG HTML, "Parsing an
// event stream") fed in pieces of any size into events, and hands each
// one's type and data to onEvent as its closing blank line arrives.
type sseReader struct {
	line    []byte
	data    []byte
	event   string
	hasData bool
	over    bool // this event passed maxUsageBody: dropped
	lineOut bool // the current line was cut off at the bound: not blank
	cr      bool // the last byte was a CR, whose LF (if next) ends nothing
	onEvent func(event string, data []byte)
}

func (r *sseReader) feed(b []byte) {
	for len(b) > 0 {
		if r.cr && b[0] == '\n' {
			b = b[1:]
			r.cr = false
			continue
		}
		r.cr = false
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			r.keep(b)
			return
		}
		r.keep(b[:i])
		r.cr = b[i] == '\r'
		b = b[i+1:]
		r.endLine()
	}
}

func (r *sseReader) keep(b []byte) {
	if len(r.line)+len(r.data)+len(b) > maxUsageBody {
		r.lineOut = true
		return
	}
	r.line = append(r.line, b...)
}

func (r *sseReader) endLine() {
	line := r.line
	r.line = r.line[:0]
	if r.lineOut {
		r.lineOut, r.over = false, true
		return
	}
	if len(line) == 0 {
		if r.hasData && !r.over {
			r.onEvent(r.event, r.data)
		}
		r.data, r.event, r.hasData, r.over = r.data[:0], "", false, false
		return
	}
	if line[0] == ':' || r.over {
		return // a comment (keep-alive), or the rest of a dropped event
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.event = string(value)
	}
}

// jsonScan finds where JSON fed in pieces ends, without parsing it: a
// top-level object, or each object in a top-level array (Gemini's
// streamGenerateContent without alt=sse), is handed to onValue as it
// closes, and onEnd is called as the top-level value closes, before the
// caller passes those bytes on.
type jsonScan struct {
	depth   int
	inStr   bool
	esc     bool
	array   bool
	buf     []byte
	over    bool // the value in buf passed maxUsageBody
	done    bool // the top-level value closed
	bad     bool // not an object or array of objects
	onValue func([]byte)
	onEnd   func()
}

func (s *jsonScan) feed(b []byte) {
	for _, c := range b {
		if s.done || s.bad {
			return
		}
		s.byte(c)
	}
}

func (s *jsonScan) byte(c byte) {
	base := 0
	if s.array {
		base = 1
	}
	if s.inStr {
		s.keep(c, base)
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.inStr = false
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
	case '[':
		if s.depth == 0 {
			s.array, s.depth = true, 1
			return
		}
		s.depth++
		s.keep(c, base)
	case '{':
		s.depth++
		s.keep(c, base)
	case '}', ']':
		if s.depth == 0 {
			s.bad = true
			return
		}
		s.keep(c, base)
		s.depth--
		switch {
		case s.depth == 0:
			if !s.array && !s.over {
				s.onValue(s.buf)
			}
			s.done = true
			s.onEnd()
		case s.array && s.depth == 1:
			if !s.over {
				s.onValue(s.buf)
			}
			s.buf, s.over = s.buf[:0], false
		}
	case '"':
		if s.depth == 0 {
			s.bad = true
			return
		}
		s.inStr = true
		s.keep(c, base)
	default:
		if s.depth == 0 {
			s.bad = true // a scalar, HTML, anything but JSON we read
			return
		}
		s.keep(c, base)
	}
}

// keep adds c to the value being collected (called after an opening
// bracket counts and before a closing one does); bytes between a
// top-level array's elements are not kept.
func (s *jsonScan) keep(c byte, base int) {
	if s.depth <= base || s.over {
		return
	}
	if len(s.buf) >= maxUsageBody {
		s.over = true
		return
	}
	s.buf = append(s.buf, c)
}
