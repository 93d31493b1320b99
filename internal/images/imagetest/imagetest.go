// Package imagetest builds small OCI images for tests: a working shell
// and cat from the host, with the layer tricks an import must handle
// (a whiteout, a setuid file, a device node). It never touches the
// network and writes nothing but what its callers ask for.
package imagetest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image is a small image the test builds from the host's dash and
// cat (with their libc): a first layer with /usr/share/old, a setuid
// file and a device node, a second that whites out /usr/share/old.
func Image(t testing.TB) v1.Image {
	t.Helper()
	type entry struct {
		name, body, link string
		typ              byte
		mode             int64
	}
	host := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("the test image needs the host's %s: %v", p, err)
		}
		return string(b)
	}
	layer := func(entries ...entry) v1.Layer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body))}
			if h.Typeflag == 0 {
				h.Typeflag = tar.TypeReg
			}
			if h.Typeflag != tar.TypeReg {
				h.Size = 0
			}
			if h.Typeflag == tar.TypeChar {
				h.Devmajor, h.Devminor = 1, 3
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			io.WriteString(tw, e.body)
		}
		tw.Close()
		b := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	dir := func(n string) entry { return entry{name: n, typ: tar.TypeDir, mode: 0o755} }
	l1 := layer(dir("usr/"), dir("usr/bin/"), dir("usr/share/"), dir("lib/"), dir("lib/x86_64-linux-gnu/"), dir("lib64/"), dir("etc/"), dir("srv/"), dir("dev/"),
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin", mode: 0o777},
		entry{name: "usr/bin/sh", body: host("/usr/bin/dash"), mode: 0o755},
		entry{name: "usr/bin/cat", body: host("/usr/bin/cat"), mode: 0o755},
		entry{name: "usr/bin/su", body: host("/usr/bin/cat"), mode: 0o4755},
		entry{name: "lib/x86_64-linux-gnu/libc.so.6", body: host("/lib/x86_64-linux-gnu/libc.so.6"), mode: 0o755},
		entry{name: "lib64/ld-linux-x86-64.so.2", body: host("/lib64/ld-linux-x86-64.so.2"), mode: 0o755},
		entry{name: "etc/os-release", body: "ID=testimage\n", mode: 0o644},
		entry{name: "usr/share/old", body: "old\n", mode: 0o644},
		entry{name: "dev/evil", typ: tar.TypeChar, mode: 0o666})
	l2 := layer(dir("usr/share/"), entry{name: "usr/share/.wh.old", mode: 0o644}, entry{name: "etc/motd", body: "layer two\n", mode: 0o644})
	img, err := mutate.AppendLayers(empty.Image, l1, l2)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Env: []string{"PATH=/usr/bin:/bin", "IMAGE_VAR=from-image"}, WorkingDir: "/srv", User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	return img
}
