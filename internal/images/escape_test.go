package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestImportRefusesEscapes feeds hostile layers and checks that nothing
// outside the destination changes: a canary directory that symlinks
// point at, and a sibling of the destination. The layers aim at the
// canary, never at the host's own files: a broken guard must fail this
// test, not overwrite the machine's /etc/passwd (it once did).
func TestImportRefusesEscapes(t *testing.T) {
	tests := []struct {
		name   string
		layers func(canary string) [][]entry
	}{
		{"dot-dot", func(string) [][]entry { return [][]entry{{fileE("../x", "x", 0o644)}} }},
		{"dot-dot after a directory", func(string) [][]entry { return [][]entry{{fileE("a/../../x", "x", 0o644)}} }},
		{"absolute dot-dot", func(string) [][]entry { return [][]entry{{fileE("/../x", "x", 0o644)}} }},
		{"write through an absolute symlink", func(c string) [][]entry {
			return [][]entry{{symE("evil", c), fileE("evil/etc/passwd", "pwned::0:0\n", 0o644)}}
		}},
		{"write through symlink outside", func(c string) [][]entry {
			return [][]entry{{symE("evil", c), fileE("evil/pwned", "x", 0o644)}}
		}},
		{"write through symlink inside", func(string) [][]entry {
			return [][]entry{{dirE("d", 0o755), symE("evil", "d"), fileE("evil/x", "x", 0o644)}}
		}},
		{"directory through symlink", func(c string) [][]entry {
			return [][]entry{{symE("evil", c), dirE("evil/d", 0o755)}}
		}},
		{"symlink from a lower layer", func(c string) [][]entry {
			return [][]entry{{symE("evil", c)}, {fileE("evil/pwned", "x", 0o644)}}
		}},
		{"hardlink dot-dot", func(string) [][]entry { return [][]entry{{linkE("h", "../outside")}} }},
		{"hardlink through symlink", func(c string) [][]entry {
			return [][]entry{{symE("evil", c), linkE("h", "evil/target")}}
		}},
		{"whiteout of the parent", func(string) [][]entry { return [][]entry{{fileE(".wh...", "", 0o644)}} }},
		{"whiteout through symlink", func(c string) [][]entry {
			return [][]entry{{symE("evil", c)}, {fileE("evil/.wh.target", "", 0o644)}}
		}},
		{"opaque through symlink", func(c string) [][]entry {
			return [][]entry{{symE("evil", c)}, {fileE("evil/.wh..wh..opq", "", 0o644)}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			sibling := filepath.Join(filepath.Dir(dst), "sibling")
			canary := t.TempDir()
			if err := os.Mkdir(filepath.Join(canary, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{sibling, filepath.Join(canary, "target"), filepath.Join(canary, "etc", "passwd")} {
				if err := os.WriteFile(f, []byte("host\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, canary)

			_, err := Import(context.Background(), Source{File: saveTarball(t, imageOfEntries(t, tt.layers(canary)))}, dst, nil)
			t.Logf("error: %v", err)
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("Import: %v, want ErrUnsafePath", err)
			}
			mustNotExist(t, dst)
			if diff := cmp.Diff(before, snapshot(t, canary)); diff != "" {
				t.Errorf("canary outside the root changed (-before +after):\n%s", diff)
			}
			if b, err := os.ReadFile(sibling); err != nil || string(b) != "host\n" {
				t.Errorf("sibling of the root: %q, %v", b, err)
			}
		})
	}
}

// TestImportReplacesLinks pins that an entry over a symlink or hardlink
// replaces the link rather than writing through it.
func TestImportReplacesLinks(t *testing.T) {
	dst := newDst(t)
	canary := t.TempDir()
	target := filepath.Join(canary, "target")
	if err := os.WriteFile(target, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	layers := [][]entry{
		{symE("conf", target), fileE("a", "a\n", 0o644), linkE("b", "a"), symE("localtime", "/usr/share/zoneinfo/UTC")},
		{fileE("conf", "new\n", 0o600), fileE("b", "b\n", 0o644)},
	}
	if _, err := Import(context.Background(), Source{File: saveTarball(t, imageOfEntries(t, layers))}, dst, nil); err != nil {
		t.Fatalf("Import: %v", err)
	}
	got := snapshot(t, dst)
	want := map[string]string{
		"conf":      `file 0600 0:0 "new\n"`,
		"a":         `file 0644 0:0 "a\n"`,
		"b":         `file 0644 0:0 "b\n"`,
		"localtime": "symlink 0:0 -> /usr/share/zoneinfo/UTC",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s, want %s", p, got[p], w)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "host\n" {
		t.Errorf("symlink target outside the root was written: %q", b)
	}
}

// imageOfEntries makes an image of one gzip layer per entry list.
func imageOfEntries(t testing.TB, layers [][]entry) v1.Image {
	var ls []v1.Layer
	for _, es := range layers {
		ls = append(ls, layerOf(t, false, es...))
	}
	return imageOf(t, ls...)
}
