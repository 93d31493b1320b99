package images

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "etc/passwd", want: "etc/passwd"},
		{in: "./etc/passwd", want: "etc/passwd"},
		{in: "/etc/passwd", want: "etc/passwd"},
		{in: "//etc//passwd/", want: "etc/passwd"},
		{in: "usr/bin/", want: "usr/bin"},
		{in: "a/../b", want: "b"},
		{in: "a/./b", want: "a/b"},
		{in: ".", want: ""},
		{in: "./", want: ""},
		{in: "/", want: ""},
		{in: "", want: ""},
		{in: "..a/b", want: "..a/b"},
		{in: ".wh..wh..opq", want: ".wh..wh..opq"},
		{in: "..", wantErr: true},
		{in: "../x", wantErr: true},
		{in: "a/../../x", wantErr: true},
		{in: "/../x", wantErr: true},
		{in: "./../x", wantErr: true},
		{in: "a\x00b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := cleanPath(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrUnsafePath) {
				t.Errorf("cleanPath(%q) = %q, %v; want ErrUnsafePath", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzCleanPath: whatever a tar header names, cleanPath either refuses it
// or returns a path that stays beneath the root when joined to it.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"etc/passwd", "../x", "/../../x", "a/../../b", "./", "..", "a/./b//c/", ".wh...", "\x00", "a/..\x00/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := cleanPath(name)
		if err != nil {
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("cleanPath(%q): %v, not ErrUnsafePath", name, err)
			}
			return
		}
		if p == "" {
			return
		}
		if !filepath.IsLocal(p) || path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
			t.Fatalf("cleanPath(%q) = %q: not a clean local path", name, p)
		}
		for c := range strings.SplitSeq(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("cleanPath(%q) = %q: component %q", name, p, c)
			}
		}
		if j := filepath.Join("/root", p); !strings.HasPrefix(j, "/root/") {
			t.Fatalf("cleanPath(%q) = %q joins to %q, outside the root", name, p, j)
		}
		if dir, base := splitPath(p); joinPath(dir, base) != p || base == "" || strings.Contains(base, "/") {
			t.Fatalf("splitPath(%q) = %q, %q", p, dir, base)
		}
	})
}
