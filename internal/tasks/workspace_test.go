package tasks

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapWriter(t *testing.T) {
	w := &capWriter{max: 5}
	if n, err := w.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("first write: %d, %v", n, err)
	}
	if n, err := w.Write([]byte("defg")); n != 2 || !errors.Is(err, errFull) || !w.full {
		t.Fatalf("write past the bound: %d, %v (full %v), want 2 and errFull", n, err, w.full)
	}
	if string(w.buf) != "abcde" {
		t.Errorf("kept %q", w.buf)
	}
	exact := &capWriter{max: 3}
	if n, err := exact.Write([]byte("abc")); n != 3 || err != nil || exact.full {
		t.Errorf("a write that fills the bound exactly: %d, %v, full %v", n, err, exact.full)
	}
}

func TestParseNameStatus(t *testing.T) {
	got := parseNameStatus("A\x00new file.txt\x00D\x00old\x00M\x00dir/m.go\x00T\x00link\x00")
	want := []Event{
		{Type: EventFileChange, Path: "new file.txt", Kind: "added"},
		{Type: EventFileChange, Path: "old", Kind: "deleted"},
		{Type: EventFileChange, Path: "dir/m.go", Kind: "modified"},
		{Type: EventFileChange, Path: "link", Kind: "modified"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := parseNameStatus(""); got != nil {
		t.Errorf("empty: %+v", got)
	}
}
