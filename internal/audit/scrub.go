package audit

import "bytes"

// Scrubber takes secret values out of what is recorded, replacing each
// with "[secret:NAME]".
type Scrubber struct {
	names  []string
	values [][]byte
	maxLen int
}

// NewScrubber scrubs the given values (by name). Values shorter than 4
// bytes are not scrubbed: they would mangle ordinary output, and a
// secret that short is no secret.
func NewScrubber(secrets map[string]string) *Scrubber {
	s := &Scrubber{}
	for name, v := range secrets {
		if len(v) < 4 {
			continue
		}
		s.names = append(s.names, name)
		s.values = append(s.values, []byte(v))
		s.maxLen = max(s.maxLen, len(v))
	}
	return s
}

// Merge returns a scrubber of s's values and old's (kept when a secret is
// rotated: the old value may still be in the sandbox's memory, files or
// output). Either may be nil.
func (s *Scrubber) Merge(old *Scrubber) *Scrubber {
	out := &Scrubber{}
	for _, sc := range []*Scrubber{s, old} {
		if sc == nil {
			continue
		}
	next:
		for i, v := range sc.values {
			for _, have := range out.values {
				if bytes.Equal(have, v) {
					continue next
				}
			}
			out.names = append(out.names, sc.names[i])
			out.values = append(out.values, v)
			out.maxLen = max(out.maxLen, len(v))
		}
	}
	return out
}

// Bytes returns b with every secret value replaced.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s == nil {
		return b
	}
	for i, v := range s.values {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte("[secret:"+s.names[i]+"]"))
		}
	}
	return b
}

// String is Bytes for a string.
func (s *Scrubber) String(v string) string {
	if s == nil || len(s.values) == 0 {
		return v
	}
	return string(s.Bytes([]byte(v)))
}

// Stream scrubs a stream written in pieces: a value cut across two
// pieces is still found, because the last bytes of each piece that could
// begin a value are held back until the next piece or Flush.
type Stream struct {
	s    *Scrubber
	hold []byte
}

// Stream returns a scrubbing stream.
func (s *Scrubber) Stream() *Stream { return &Stream{s: s} }

// Write returns what of p (after what was held back) can be recorded now.
func (st *Stream) Write(p []byte) []byte {
	if st.s == nil || st.s.maxLen == 0 {
		return p
	}
	b := st.s.Bytes(append(st.hold, p...))
	keep := min(len(b), st.s.maxLen-1)
	// Hold back only a tail that is a prefix of some value.
	for ; keep > 0; keep-- {
		tail := b[len(b)-keep:]
		if st.prefixOfValue(tail) {
			break
		}
	}
	st.hold = append([]byte(nil), b[len(b)-keep:]...)
	return b[:len(b)-keep]
}

// Flush returns what is held back.
func (st *Stream) Flush() []byte {
	b := st.hold
	st.hold = nil
	return b
}

func (st *Stream) prefixOfValue(tail []byte) bool {
	for _, v := range st.s.values {
		if len(tail) < len(v) && bytes.HasPrefix(v, tail) {
			return true
		}
	}
	return false
}
