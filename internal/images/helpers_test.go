package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlockhq/airlock/internal/testenv"
)

// testMtime is every test entry's mtime unless it says otherwise.
var testMtime = time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)

// entry is one tar entry of a test layer.
type entry struct {
	name     string
	typ      byte // tar.TypeReg when 0
	mode     int64
	body     string
	link     string
	uid, gid int
	xattrs   map[string]string
}

func dirE(name string, mode int64) entry        { return entry{name: name, typ: tar.TypeDir, mode: mode} }
func fileE(name, body string, mode int64) entry { return entry{name: name, body: body, mode: mode} }
func symE(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: target, mode: 0o777}
}
func linkE(name, target string) entry { return entry{name: name, typ: tar.TypeLink, link: target} }

// layerTar writes entries as an uncompressed layer tar.
func layerTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link,
			Uid: e.uid, Gid: e.gid, ModTime: testMtime, Format: tar.FormatPAX,
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		for k, v := range e.xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Typeflag == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %s: %v", e.name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatalf("tar body %s: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerOf makes a layer of entries, gzip unless zstd.
func layerOf(t testing.TB, zstd bool, entries ...entry) v1.Layer {
	t.Helper()
	b := layerTar(t, entries...)
	var opts []tarball.LayerOption
	if zstd {
		opts = append(opts, tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, opts...)
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	return l
}

// imageOf stacks layers on an empty image with a run config.
func imageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, testRunConfig)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

var testRunConfig = v1.Config{
	Env:        []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
	WorkingDir: "/srv",
	User:       "33:33",
	Entrypoint: []string{"/usr/bin/tool"},
	Cmd:        []string{"--serve"},
}

// withPlatform sets the config's platform.
func withPlatform(t testing.TB, img v1.Image, os, arch string) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = os, arch
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// startRegistry serves an empty in-memory registry on loopback, wrapped
// by wrap if not nil, and returns its host:port.
func startRegistry(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// testTransport is a fresh loopback transport closed with the test.
func testTransport(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// push writes img (or an index) to host and returns its reference.
func push(t testing.TB, host, repo string, img any, auth authn.Authenticator) string {
	t.Helper()
	ref, err := name.ParseReference(host+"/"+repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	opts := []remote.Option{remote.WithTransport(testTransport(t)), remote.WithAuth(auth)}
	switch v := img.(type) {
	case v1.Image:
		err = remote.Write(ref, v, opts...)
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, v, opts...)
	}
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}

// registrySource is a Source for ref on a loopback registry.
func registrySource(t testing.TB, ref string) Source {
	return Source{Ref: ref, Transport: testTransport(t), Insecure: true}
}

// newDst is a destination path that does not exist yet.
func newDst(t testing.TB) string {
	if runtime.GOOS != "linux" {
		testenv.Unsupported(t, "flattening images needs Linux")
	}
	testenv.RequiresRoot(t, "chown extracted files to the image's owners")
	return filepath.Join(t.TempDir(), "rootfs")
}

// mustNotExist fails t if p exists: a failed import leaves nothing.
func mustNotExist(t testing.TB, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s exists after a failed import (lstat: %v)", p, err)
	}
}

// snapshot describes every path beneath root: kind, permissions, owner,
// and a file's content or a symlink's target.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%04o %d:%d", st.Mode&0o7777, st.Uid, st.Gid)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			desc = "dir " + desc
		case syscall.S_IFLNK:
			target, _ := os.Readlink(p)
			desc = fmt.Sprintf("symlink %d:%d -> %s", st.Uid, st.Gid, target)
		case syscall.S_IFREG:
			b, _ := os.ReadFile(p)
			desc = fmt.Sprintf("file %s %q", desc, b)
		default:
			desc = fmt.Sprintf("other %o", st.Mode)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}
