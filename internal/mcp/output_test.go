package mcp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapture(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		limit  int
		want   string
		cut    bool
	}{
		{"empty", nil, 8, "", false},
		{"fits", []string{"abc", "def"}, 8, "abcdef", false},
		{"exactly", []string{"abcdefgh"}, 8, "abcdefgh", false},
		// head is 6 bytes, tail 2: the end survives.
		{"over", []string{"abcdefgh", "ijkl"}, 8, "abcdef\n[... 4 bytes left out ...]\nkl", true},
		{"many small", strings.Split("0123456789xyz", ""), 8, "012345\n[... 5 bytes left out ...]\nyz", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(tc.limit)
			for _, w := range tc.writes {
				if n, err := c.write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %q: %d, %v", w, n, err)
				}
			}
			if diff := cmp.Diff(tc.want, c.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
			if c.cut() != tc.cut {
				t.Errorf("cut() = %v, want %v", c.cut(), tc.cut)
			}
		})
	}
}

func TestIsText(t *testing.T) {
	for _, tc := range []struct {
		data string
		cut  bool
		want bool
	}{
		{"plain\n", false, true},
		{"héllo", false, true},
		{"a\x00b", false, false},
		{"\xff\xfe", false, false},
		{"h\xc3", false, false}, // a whole file cannot end inside a character
		{"h\xc3", true, true},   // a cut one can
	} {
		if got := isText([]byte(tc.data), tc.cut); got != tc.want {
			t.Errorf("isText(%q, cut %v) = %v, want %v", tc.data, tc.cut, got, tc.want)
		}
	}
}

func TestParseFileURI(t *testing.T) {
	for _, tc := range []struct {
		uri, id, path string
		bad           bool
	}{
		{uri: "airlock://sandboxes/sb-1/files/home/user/a.txt", id: "sb-1", path: "/home/user/a.txt"},
		{uri: "airlock://sandboxes/sb-1/files/etc/hostname", id: "sb-1", path: "/etc/hostname"},
		{uri: "airlock://sandboxes/sb-1/files/home%2Fuser%2Fa%20b.txt", id: "sb-1", path: "/home/user/a b.txt"},
		{uri: "airlock://sandboxes/sb-1/files//tmp/x", id: "sb-1", path: "/tmp/x"},
		{uri: "airlock://sandboxes/sb-1/files/", bad: true},
		{uri: "airlock://sandboxes/sb-1", bad: true},
		{uri: "airlock://sandboxes//files/x", bad: true},
		{uri: "airlock://sandboxes/a/b/files/x", bad: true},
		{uri: "file:///etc/passwd", bad: true},
		{uri: "airlock://sandboxes/sb-1/files/%zz", bad: true},
	} {
		id, p, err := parseFileURI(tc.uri)
		if tc.bad {
			if err == nil {
				t.Errorf("parseFileURI(%q) = %q, %q; want an error", tc.uri, id, p)
			}
			continue
		}
		if err != nil || id != tc.id || p != tc.path {
			t.Errorf("parseFileURI(%q) = %q, %q, %v; want %q, %q", tc.uri, id, p, err, tc.id, tc.path)
		}
	}
}

// FuzzParseFileURI: whatever a client sends, a parsed URI names one
// sandbox id (no slash, so never another route) and an absolute path.
func FuzzParseFileURI(f *testing.F) {
	f.Add("airlock://sandboxes/sb-1/files/home/user/a.txt")
	f.Add("airlock://sandboxes/x/files/%2e%2e/%2e%2e/etc")
	f.Fuzz(func(t *testing.T, uri string) {
		id, p, err := parseFileURI(uri)
		if err != nil {
			return
		}
		if id == "" || strings.Contains(id, "/") || !strings.HasPrefix(p, "/") {
			t.Errorf("parseFileURI(%q) = %q, %q", uri, id, p)
		}
	})
}
