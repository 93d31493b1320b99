package cast

import (
	"strings"
	"unicode/utf8"
)

// textStream turns one stream's recorded pieces into UTF-8 text. The
// recorder cuts pieces by size and time, not by character, so a piece may
// end inside a multi-byte character: that tail (at most 3 bytes) is
// carried to the next piece instead of becoming two U+FFFD.
type textStream struct {
	tail []byte
	crlf bool // put "\r" before a bare "\n", as a terminal's ONLCR does
	cr   bool // the last byte written was "\r"
}

// next returns the text of p after what was carried.
func (s *textStream) next(p []byte) string {
	b := append(s.tail, p...)
	n := incompleteTail(b)
	s.tail = append([]byte(nil), b[len(b)-n:]...)
	return s.text(b[:len(b)-n])
}

// flush returns U+FFFD for a character the stream ended inside of, or "".
func (s *textStream) flush() string {
	b := s.tail
	s.tail = nil
	return s.text(b)
}

func (s *textStream) text(b []byte) string {
	t := validUTF8(b)
	if !s.crlf || t == "" {
		return t
	}
	var sb strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '\n' && !s.cr {
			sb.WriteByte('\r')
		}
		s.cr = t[i] == '\r'
		sb.WriteByte(t[i])
	}
	return sb.String()
}

// incompleteTail is the length of the start of a character that b ends
// with: bytes that are not (yet) invalid but need more to be complete.
func incompleteTail(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		if !utf8.FullRune(b[len(b)-k:]) {
			return k
		}
	}
	return 0
}

// validUTF8 returns b as a string with each maximal invalid subpart
// (Unicode's recommended practice, which Python's decoder follows)
// replaced by one U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[:size])
			b = b[size:]
			continue
		}
		// The longest prefix of a valid character at b is skipped as one.
		size = 1
		for k := 2; k < utf8.UTFMax && k <= len(b); k++ {
			if !utf8.FullRune(b[:k]) {
				size = k
			}
		}
		sb.WriteRune(utf8.RuneError)
		b = b[size:]
	}
	return sb.String()
}

// shellQuote joins argv as a POSIX shell would read it back.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quoteArg(a)
	}
	return strings.Join(q, " ")
}

func quoteArg(a string) string {
	if a == "" {
		return "''"
	}
	safe := true
	for _, r := range a {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("@%+=:,./-_", r):
		default:
			safe = false
		}
	}
	if safe {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// maxLabel bounds a marker's label and a cast's title, in characters: a
// command can be a whole script.
const maxLabel = 120

// label is s on one line, bounded.
func label(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxLabel {
		return s
	}
	r := []rune(s)
	return string(r[:maxLabel-1]) + "…"
}

// lineEditor follows what is typed at a terminal well enough to label
// the line when Enter is pressed: printable text is kept, backspace
// removes a character, Ctrl-U and Ctrl-C drop the line, and escape
// sequences (arrow keys, function keys) are skipped, even when cut
// across pieces.
type lineEditor struct {
	line []rune
	esc  int  // 0: text; 1: after ESC; 2: in a CSI or SS3 sequence
	cr   bool // the last character was "\r" (so a "\n" after it is no new line)
}

// maxLine bounds the line an editor keeps: a paste of a megabyte needs
// no more than its first characters for a label.
const maxEditLine = 4 * maxLabel

// feed takes typed text and returns the labels of the lines it ended.
func (l *lineEditor) feed(s string) []string {
	var ended []string
	for _, r := range s {
		cr := l.cr
		l.cr = r == '\r'
		switch {
		case l.esc == 1:
			l.esc = 0
			if r == '[' || r == 'O' {
				l.esc = 2
			}
		case l.esc == 2:
			if r >= 0x40 && r <= 0x7e {
				l.esc = 0
			}
		case r == 0x1b:
			l.esc = 1
		case r == '\r' || r == '\n' && !cr:
			if t := label(string(l.line)); t != "" {
				ended = append(ended, t)
			}
			l.line = l.line[:0]
		case r == 0x7f || r == 0x08:
			if len(l.line) > 0 {
				l.line = l.line[:len(l.line)-1]
			}
		case r == 0x15 || r == 0x03:
			l.line = l.line[:0]
		case r == '\t':
			l.line = append(l.line, ' ')
		case r < 0x20 || r == utf8.RuneError:
		default:
			if len(l.line) < maxEditLine {
				l.line = append(l.line, r)
			}
		}
	}
	return ended
}
