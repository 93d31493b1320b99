package live

import (
	"bytes"
	"testing"
)

// feed runs pieces through a fresh markFilter and returns what watchers
// would see.
func feed(pieces ...[]byte) []byte {
	var f markFilter
	var out []byte
	for _, p := range pieces {
		o, _ := f.filter(p)
		out = append(out, o...)
	}
	return out
}

// TestMarkFilter: end markers are taken out however the writes cut them;
// text that only looks like one is kept; bare line feeds become CR LF.
func TestMarkFilter(t *testing.T) {
	mark := func(rc string) string { return "\x1eAIRLOCK-0123456789abcdef01234567-" + rc + "\x1f\n" }
	for _, tc := range []struct{ in, want string }{
		{"plain\n", "plain\r\n"},
		{mark("0"), ""},
		{"hello\n" + mark("0") + "world\n" + mark("127") + "end", "hello\r\nworld\r\nend"},
		{"a" + mark("1") + mark("2") + "b", "ab"},
		// A marker with no line feed after it (the next output follows).
		{"x" + "\x1eAIRLOCK-abc-0\x1f" + "y", "xy"},
		// Look-alikes are kept as they are.
		{"\x1eAIRLOCK-zz\n", "\x1eAIRLOCK-zz\r\n"},
		{"\x1eAIRLOCK-abc def\n", "\x1eAIRLOCK-abc def\r\n"},
		{"\x1eAIRLOCX-abc-0\x1f\n", "\x1eAIRLOCX-abc-0\x1f\r\n"},
		{"\x1e\x1e\n", "\x1e\x1e\r\n"},
		{"\x1eAIR\n", "\x1eAIR\r\n"},
		{"before \x1eAIRLOCK-zz" + mark("0") + "after\n", "before \x1eAIRLOCK-zz" + "after\r\n"},
		// Already CR LF stays so.
		{"a\r\nb\n", "a\r\nb\r\n"},
	} {
		in := []byte(tc.in)
		if got := feed(in); string(got) != tc.want {
			t.Errorf("%q whole: got %q, want %q", tc.in, got, tc.want)
		}
		// Cut in two at every point, and in three at every pair of points.
		for i := 0; i <= len(in); i++ {
			if got := feed(in[:i], in[i:]); string(got) != tc.want {
				t.Errorf("%q cut at %d: got %q, want %q", tc.in, i, got, tc.want)
			}
			for j := i; j <= len(in); j++ {
				if got := feed(in[:i], in[i:j], in[j:]); string(got) != tc.want {
					t.Errorf("%q cut at %d and %d: got %q, want %q", tc.in, i, j, got, tc.want)
				}
			}
		}
		// One byte at a time.
		var pieces [][]byte
		for i := range in {
			pieces = append(pieces, in[i:i+1])
		}
		if got := feed(pieces...); string(got) != tc.want {
			t.Errorf("%q byte by byte: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMarkerLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1}, // could still become one
		{"\x1e", -1},
		{"\x1eAIRLOCK", -1},
		{"\x1eAIRLOCK-", -1},
		{"\x1eAIRLOCK-ab12-3", -1},
		{"\x1eAIRLOCK-ab12-3\x1f", -1}, // its line feed may follow
		{"\x1eAIRLOCK-ab12-3\x1f\nrest", len("\x1eAIRLOCK-ab12-3\x1f\n")},
		{"\x1eAIRLOCK-ab12-3\x1frest", len("\x1eAIRLOCK-ab12-3\x1f")},
		{"\x1eAIRLOCK-zz", 0},
		{"\x1eAIRLOCK-AB", 0}, // upper-case hex is not ours
		{"\x1eAIRLOCX-", 0},
		{"x\x1eAIRLOCK-", 0},
		{"\x1eAIRLOCK-" + string(bytes.Repeat([]byte("a"), 100)), 0}, // too long
	} {
		if got := markerLen([]byte(tc.in)); got != tc.want {
			t.Errorf("markerLen(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestCRLF(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\n", "\r\n"},
		{"\n\n", "\r\n\r\n"},
		{"a\nb\n", "a\r\nb\r\n"},
		{"a\r\nb", "a\r\nb"},
		{"\r\n\n\r\r\n", "\r\n\r\n\r\r\n"},
	} {
		if got := crlf([]byte(tc.in)); string(got) != tc.want {
			t.Errorf("crlf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
