package egress

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// naiveReplace is the reference: leftmost, then longest, non-overlapping,
// over the whole input at once.
func naiveReplace(in []byte, old, new [][]byte) []byte {
	var out []byte
	for i := 0; i < len(in); {
		w := -1
		for k, o := range old {
			if len(o) > 0 && bytes.HasPrefix(in[i:], o) && (w < 0 || len(o) > len(old[w])) {
				w = k
			}
		}
		if w < 0 {
			out = append(out, in[i])
			i++
			continue
		}
		out = append(out, new[w]...)
		i += len(old[w])
	}
	return out
}

func patBytes(ss ...string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, []byte(s))
	}
	return out
}

// chunkyReader returns at most n bytes per Read, n varying with the seed.
type chunkyReader struct {
	r   io.Reader
	rnd *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	n := 1 + c.rnd.IntN(len(p))
	if c.rnd.IntN(4) == 0 {
		n = min(n, 1+c.rnd.IntN(8))
	}
	return c.r.Read(p[:n])
}

func TestReplacer(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		old, new []string
		want     string
	}{
		{"none", "hello", []string{"xyz"}, []string{"Q"}, "hello"},
		{"one", "a PH b", []string{"PH"}, []string{"secret"}, "a secret b"},
		{"every", "PHPHxPH", []string{"PH"}, []string{"v"}, "vvxv"},
		{"shrink", "xxPLACEHOLDERyy", []string{"PLACEHOLDER"}, []string{"1"}, "xx1yy"},
		{"no rescan", "PH", []string{"PH"}, []string{"PHPH"}, "PHPH"},
		{"leftmost wins", "abcd", []string{"bcd", "ab"}, []string{"1", "2"}, "2cd"},
		{"longest at same place", "abcd", []string{"ab", "abc"}, []string{"1", "2"}, "2d"},
		{"overlap self", "aaa", []string{"aa"}, []string{"b"}, "ba"},
		{"prefix at end", "xx PLACEHOL", []string{"PLACEHOLDER"}, []string{"v"}, "xx PLACEHOL"},
		{"two patterns", "k1=A;k2=B", []string{"A", "B"}, []string{"alpha", "beta"}, "k1=alpha;k2=beta"},
		{"empty pattern ignored", "abc", []string{"", "b"}, []string{"X", "Y"}, "aYc"},
		{"empty input", "", []string{"a"}, []string{"b"}, ""},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"onebyte": iotest.OneByteReader,
		"half":    iotest.HalfReader,
		"dataerr": iotest.DataErrReader,
	}
	for _, tt := range tests {
		for rn, wrap := range readers {
			t.Run(tt.name+"/"+rn, func(t *testing.T) {
				ps := newPatterns(patBytes(tt.old...), patBytes(tt.new...))
				got, err := io.ReadAll(newReplacer(wrap(strings.NewReader(tt.in)), ps))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, string(got)); diff != "" {
					t.Errorf("replaced (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestReplacerCounts(t *testing.T) {
	r := newReplacer(iotest.OneByteReader(strings.NewReader("A B A A")), newPatterns(patBytes("A", "B", "C"), patBytes("1", "2", "3")))
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 1, 0}, r.counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// A read error must not flush the held-back bytes: they may be the first
// half of a secret.
func TestReplacerErrorDropsHeldBack(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("data SECR"), iotest.ErrReader(boom))
	got, err := io.ReadAll(newReplacer(src, newPatterns(patBytes("SECRET"), patBytes("ph"))))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if string(got) != "data " {
		t.Errorf("got %q, want %q", got, "data ")
	}
}

// Only a possible match's beginning is held back, so a stream's complete
// lines go out at once (a model's streamed tokens are not delayed).
func TestReplacerHoldsBackOnlyPrefixes(t *testing.T) {
	pr, pw := io.Pipe()
	r := newReplacer(pr, newPatterns(patBytes(strings.Repeat("Z", 64)), patBytes("x")))
	go pw.Write([]byte("data: token\n\n"))
	buf := make([]byte, 100)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "data: token\n\n" {
		t.Fatalf("Read = %q, %v; want the whole event", buf[:n], err)
	}
	go func() {
		pw.Write([]byte("ZZZZ"))
		pw.Close()
	}()
	rest, _ := io.ReadAll(r)
	if string(rest) != "ZZZZ" {
		t.Errorf("rest = %q, want ZZZZ", rest)
	}
}

func FuzzReplacer(f *testing.F) {
	f.Add([]byte("xxPLACEHOLDERyyPLACEHOLDER"), []byte("PLACEHOLDER"), []byte("v"), []byte("PLACE"), uint64(1))
	f.Add([]byte("aaaaaaa"), []byte("aa"), []byte("aaa"), []byte("a"), uint64(7))
	f.Add([]byte("abcabcab"), []byte("cab"), []byte(""), []byte("abc"), uint64(3))
	f.Fuzz(func(t *testing.T, in, old, new, old2 []byte, seed uint64) {
		if len(old) == 0 {
			return
		}
		single := newPatterns([][]byte{old}, [][]byte{new})
		want := bytes.ReplaceAll(in, old, new)
		for _, src := range []io.Reader{
			iotest.OneByteReader(bytes.NewReader(in)),
			&chunkyReader{r: bytes.NewReader(in), rnd: rand.New(rand.NewPCG(seed, 1))},
		} {
			got, err := io.ReadAll(newReplacer(src, single))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("single: got %q, %v; want %q", got, err, want)
			}
		}
		// Two patterns, possibly overlapping, against the naive reference.
		olds, news := [][]byte{old, old2}, [][]byte{new, []byte("<2>")}
		want = naiveReplace(in, olds, news)
		src := &chunkyReader{r: bytes.NewReader(in), rnd: rand.New(rand.NewPCG(seed, 2))}
		got, err := io.ReadAll(newReplacer(src, newPatterns(olds, news)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("pair: got %q, %v; want %q", got, err, want)
		}
	})
}

// A long partial match arriving a byte at a time is progress, not a
// stuck reader.
func TestReplacerSlowPartialMatch(t *testing.T) {
	pat := strings.Repeat("p", 300)
	in := "x" + pat[:299] + "y" + pat + "z"
	got, err := io.ReadAll(newReplacer(iotest.OneByteReader(strings.NewReader(in)), newPatterns(patBytes(pat), patBytes("V"))))
	if err != nil {
		t.Fatal(err)
	}
	if want := "x" + pat[:299] + "yVz"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
