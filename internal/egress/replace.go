package egress

import (
	"bytes"
	"io"
)

// patterns is a set of byte strings to replace, each with its replacement.
// Matching is leftmost first, then longest, and never overlapping: what a
// replacement produced is not searched again, so a value that happens to
// contain a placeholder cannot be expanded twice.
type patterns struct {
	old, new [][]byte
	maxLen   int
}

// newPatterns returns the set of old[i] -> new[i]; empty patterns are
// dropped, and of two equal patterns the first wins.
func newPatterns(old, new [][]byte) *patterns {
	ps := &patterns{}
	for i, o := range old {
		if len(o) == 0 || containsBytes(ps.old, o) {
			continue
		}
		ps.old = append(ps.old, o)
		ps.new = append(ps.new, new[i])
		ps.maxLen = max(ps.maxLen, len(o))
	}
	return ps
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, l := range list {
		if bytes.Equal(l, b) {
			return true
		}
	}
	return false
}

// replace appends b with every match replaced to dst. Unless final, more
// input follows b: a match is taken only once no pattern could still match
// earlier or longer with more bytes, and the tail of b that could begin a
// match is left for the next call. It returns dst and how much of b it
// consumed. counts[i], if counts is not nil, is incremented per match of
// pattern i.
func (ps *patterns) replace(dst, b []byte, final bool, counts []int) ([]byte, int) {
	var next [8]int
	idx := next[:0]
	for range ps.old {
		idx = append(idx, -2) // not searched yet
	}
	pos := 0
	for {
		j, w := ps.first(b, pos, idx)
		if j < 0 {
			break
		}
		if !final && j+ps.maxLen > len(b) && pos+ps.pending(b[pos:]) <= j {
			// A pattern may still match at or before j once more bytes
			// come: leftmost-longest must wait for them.
			break
		}
		dst = append(dst, b[pos:j]...)
		dst = append(dst, ps.new[w]...)
		if counts != nil {
			counts[w]++
		}
		pos = j + len(ps.old[w])
	}
	end := len(b)
	if !final {
		end = pos + ps.pending(b[pos:])
	}
	return append(dst, b[pos:end]...), end
}

// first returns the leftmost, then longest, match in b at or after pos,
// and which pattern it is (-1: none). idx caches each pattern's next
// occurrence (-1: none left, below pos: search again).
func (ps *patterns) first(b []byte, pos int, idx []int) (at, which int) {
	at, which = -1, -1
	for i, o := range ps.old {
		if idx[i] != -1 && idx[i] < pos {
			idx[i] = -1
			if k := bytes.Index(b[pos:], o); k >= 0 {
				idx[i] = pos + k
			}
		}
		if k := idx[i]; k >= 0 && (at < 0 || k < at || k == at && len(o) > len(ps.old[which])) {
			at, which = k, i
		}
	}
	return at, which
}

// pending returns the earliest offset in b from which the rest of b is a
// proper prefix of some pattern (len(b): none), i.e. where a match could
// begin that only more input can complete. Only that much is held back, so
// a stream of events (server-sent events from a model API) is not delayed
// by a pattern's full length.
func (ps *patterns) pending(b []byte) int {
	best := len(b)
	for _, o := range ps.old {
		for i := max(0, len(b)-len(o)+1); i < best; i++ {
			k := bytes.IndexByte(b[i:best], o[0])
			if k < 0 {
				break
			}
			i += k
			if bytes.HasPrefix(o, b[i:]) {
				best = i
				break
			}
		}
	}
	return best
}

// replaceString replaces every match in s, counting matches in counts.
func (ps *patterns) replaceString(s string, counts []int) string {
	if len(ps.old) == 0 {
		return s
	}
	out, _ := ps.replace(nil, []byte(s), true, counts)
	return string(out)
}

// replacer is an io.ReadCloser that streams src with every pattern
// replaced. It holds back at most maxLen-1 bytes between reads, so matches
// split across chunk boundaries are found.
type replacer struct {
	src    io.Reader
	ps     *patterns
	in     []byte // input not yet consumed: a possible match's beginning
	out    []byte // output not yet returned, from off
	off    int
	err    error // src's error, returned once out is drained
	counts []int // matches per pattern so far
}

const replaceChunk = 32 << 10

func newReplacer(src io.Reader, ps *patterns) *replacer {
	return &replacer{src: src, ps: ps, counts: make([]int, len(ps.old)),
		in: make([]byte, 0, ps.maxLen+replaceChunk)}
}

func (r *replacer) Read(p []byte) (int, error) {
	for empty := 0; r.off == len(r.out); {
		if r.err != nil {
			return 0, r.err
		}
		if empty >= 100 {
			return 0, io.ErrNoProgress
		}
		if r.fill() == 0 {
			empty++
		}
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// fill reads once from src and replaces what can be decided; it returns
// how many bytes it read.
func (r *replacer) fill() int {
	r.out, r.off = r.out[:0], 0
	n, err := r.src.Read(r.in[len(r.in):cap(r.in)])
	r.in = r.in[:len(r.in)+n]
	switch {
	case err == io.EOF:
		r.out, _ = r.ps.replace(r.out, r.in, true, r.counts)
		r.in, r.err = r.in[:0], io.EOF
	case err != nil:
		// The held-back bytes are dropped, not passed on: they may be
		// the first half of a secret.
		r.in, r.err = r.in[:0], err
	default:
		var used int
		r.out, used = r.ps.replace(r.out, r.in, false, r.counts)
		r.in = r.in[:copy(r.in, r.in[used:])]
	}
	return n
}

// Close closes src if it can be closed.
func (r *replacer) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
