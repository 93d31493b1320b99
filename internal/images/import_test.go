package images

import (
	"archive/tar"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// fixtureLayers are three layers exercising every rule: a base with a
// setuid file, a device node, a FIFO, hardlinks and symlinks; a layer with
// a whiteout and an opaque directory; a zstd layer with another whiteout.
func fixtureEntries() [][]entry {
	base := []entry{
		dirE("etc", 0o755),
		fileE("etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644),
		fileE("etc/gone", "lower\n", 0o644),
		dirE("opq", 0o755),
		fileE("opq/lower", "lower\n", 0o644),
		dirE("opq/sub", 0o755),
		fileE("opq/sub/deep", "lower\n", 0o644),
		dirE("usr", 0o755),
		dirE("usr/bin", 0o755),
		fileE("usr/bin/tool", "tool\n", 0o755),
		linkE("usr/bin/tool-link", "usr/bin/tool"),
		fileE("usr/bin/su", "su\n", 0o4755),
		fileE("usr/bin/sg", "sg\n", 0o2755),
		{name: "usr/bin/ping", body: "ping\n", mode: 0o755, xattrs: map[string]string{
			"security.capability":    "\x01\x00\x00\x02\x00\x20\x00\x00", // cap_net_raw+ep
			"trusted.overlay.opaque": "y",
			"user.note":              "x",
		}},
		symE("bin", "usr/bin"),
		dirE("var", 0o755),
		dirE("var/cache", 0o1777),
		symE("tmp", "/var/tmp"), // a mount point as a symlink: replaced
		dirE("dev", 0o755),
		{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		dirE("run", 0o755),
		{name: "run/fifo", typ: tar.TypeFifo, mode: 0o644},
		linkE("run/fifo-link", "run/fifo"),
		linkE("run/fifo-link2", "run/fifo-link"),
		{name: "srv", typ: tar.TypeDir, mode: 0o755, uid: 33, gid: 33},
		{name: "srv/www", body: "www\n", mode: 0o640, uid: 33, gid: 44},
	}
	middle := []entry{
		fileE("etc/.wh.gone", "", 0o644),
		fileE("etc/passwd", "root:x:0:0::/root:/bin/bash\n", 0o644),
		dirE("opq", 0o755),
		fileE("opq/upper-before", "upper\n", 0o644),
		fileE("opq/.wh..wh..opq", "", 0o644),
		fileE("opq/upper-after", "upper\n", 0o644),
	}
	top := []entry{
		fileE("etc/motd", "hello from zstd\n", 0o644),
		fileE("usr/bin/.wh.sg", "", 0o644),
	}
	return [][]entry{base, middle, top}
}

func fixtureLayers(t testing.TB) []v1.Layer {
	e := fixtureEntries()
	return []v1.Layer{layerOf(t, false, e[0]...), layerOf(t, false, e[1]...), layerOf(t, true, e[2]...)}
}

// fixtureSize is the file content bytes fixtureLayers write.
func fixtureSize() int64 {
	var n int64
	for _, layer := range fixtureEntries() {
		for _, e := range layer {
			n += int64(len(e.body))
		}
	}
	return n
}

// fixtureWant is the root fixtureLayers flatten to.
var fixtureWant = map[string]string{
	"bin":               "symlink 0:0 -> usr/bin",
	"dev":               "dir 0755 0:0",
	"etc":               "dir 0755 0:0",
	"etc/motd":          `file 0644 0:0 "hello from zstd\n"`,
	"etc/passwd":        `file 0644 0:0 "root:x:0:0::/root:/bin/bash\n"`,
	"home":              "dir 0755 0:0",
	"home/user":         "dir 0755 1000:1000",
	"opq":               "dir 0755 0:0",
	"opq/upper-after":   `file 0644 0:0 "upper\n"`,
	"opq/upper-before":  `file 0644 0:0 "upper\n"`,
	"proc":              "dir 0755 0:0",
	"root":              "dir 0700 0:0",
	"run":               "dir 0755 0:0",
	"srv":               "dir 0755 33:33",
	"srv/www":           `file 0640 33:44 "www\n"`,
	"sys":               "dir 0755 0:0",
	"tmp":               "dir 1777 0:0",
	"usr":               "dir 0755 0:0",
	"usr/bin":           "dir 0755 0:0",
	"usr/bin/ping":      `file 0755 0:0 "ping\n"`,
	"usr/bin/su":        `file 0755 0:0 "su\n"`,
	"usr/bin/tool":      `file 0755 0:0 "tool\n"`,
	"usr/bin/tool-link": `file 0755 0:0 "tool\n"`,
	"var":               "dir 0755 0:0",
	"var/cache":         "dir 1777 0:0",
	"var/tmp":           "dir 1777 0:0",
}

func TestImportFromRegistry(t *testing.T) {
	dst := newDst(t)
	img := imageOf(t, fixtureLayers(t)...)
	ref := push(t, startRegistry(t, nil), "fixture", img, nil)

	cfg, err := Import(context.Background(), registrySource(t, ref), dst, nil)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if diff := cmp.Diff(fixtureWant, snapshot(t, dst)); diff != "" {
		t.Errorf("root filesystem (-want +got):\n%s", diff)
	}
	digest, _ := img.Digest()
	wantCfg := Config{
		Env: testRunConfig.Env, WorkingDir: "/srv", User: "33:33",
		Entrypoint: testRunConfig.Entrypoint, Cmd: testRunConfig.Cmd,
		Digest: digest.String(), Size: fixtureSize(),
	}
	if diff := cmp.Diff(wantCfg, cfg); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}

	var tool, link syscall.Stat_t
	syscall.Lstat(filepath.Join(dst, "usr/bin/tool"), &tool)
	syscall.Lstat(filepath.Join(dst, "usr/bin/tool-link"), &link)
	if tool.Ino == 0 || tool.Ino != link.Ino || tool.Nlink != 2 {
		t.Errorf("hardlink: tool inode %d (nlink %d), tool-link inode %d: want one shared inode", tool.Ino, tool.Nlink, link.Ino)
	}
	if n, err := unix.Llistxattr(filepath.Join(dst, "usr/bin/ping"), make([]byte, 1024)); err != nil || n != 0 {
		t.Errorf("usr/bin/ping has %d bytes of xattr names (%v), want none: images carry no file capabilities", n, err)
	}
	fi, err := os.Lstat(filepath.Join(dst, "srv/www"))
	if err != nil || !fi.ModTime().Equal(testMtime) {
		t.Errorf("srv/www mtime = %v (%v), want %v", fi.ModTime(), err, testMtime)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "srv")); err != nil || !fi.ModTime().Equal(testMtime) {
		t.Errorf("srv mtime = %v (%v), want %v: directory mtimes are set after their content", fi.ModTime(), err, testMtime)
	}
}

func TestImportRefusesNilTransport(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "rootfs")
	_, err := Import(context.Background(), Source{Ref: "127.0.0.1:1/x:latest", Insecure: true}, dst, nil)
	if !errors.Is(err, ErrNoTransport) || !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("Import with nil Transport: %v, want ErrNoTransport", err)
	}
	mustNotExist(t, dst)
}

// TestImportRefusesPlainHTTP pins that a loopback registry, which the
// registry client would speak http to by itself, is refused unless the
// source says Insecure, before any request reaches it.
func TestImportRefusesPlainHTTP(t *testing.T) {
	dst := newDst(t)
	var requests atomic.Int32
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	ref := push(t, host, "fixture", imageOf(t, layerOf(t, false, fileE("a", "a", 0o644))), nil)
	requests.Store(0)

	src := registrySource(t, ref)
	src.Insecure = false
	_, err := Import(context.Background(), src, dst, nil)
	if err == nil || !strings.Contains(err.Error(), "refusing plain http") {
		t.Fatalf("Import over http without Insecure: %v, want a refusal", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the registry, want 0", n)
	}
	mustNotExist(t, dst)
}

func TestImportPlatform(t *testing.T) {
	amd := withPlatform(t, imageOf(t, layerOf(t, false, fileE("arch", "amd64", 0o644))), "linux", "amd64")
	arm := withPlatform(t, imageOf(t, layerOf(t, false, fileE("arch", "arm64", 0o644))), "linux", "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	host := startRegistry(t, nil)
	idxRef := push(t, host, "multi", idx, nil)
	armRef := push(t, host, "armonly", arm, nil)

	tests := []struct {
		name, ref, platform string
		want                string // content of /arch; "" for an error
	}{
		{"index amd64", idxRef, "linux/amd64", "amd64"},
		{"index arm64", idxRef, "linux/arm64", "arm64"},
		{"index lacks platform", idxRef, "linux/s390x", ""},
		{"single manifest of another platform", armRef, "linux/amd64", ""},
		{"single manifest of its platform", armRef, "linux/arm64", "arm64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			src := registrySource(t, tt.ref)
			src.Platform = tt.platform
			_, err := Import(context.Background(), src, dst, nil)
			if tt.want == "" {
				if err == nil {
					t.Fatal("Import succeeded, want a platform error")
				}
				mustNotExist(t, dst)
				return
			}
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(dst, "arch")); string(b) != tt.want {
				t.Errorf("/arch = %q, want %q", b, tt.want)
			}
		})
	}
}

func TestImportDestinationExists(t *testing.T) {
	dst := newDst(t)
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(dst, "keep")
	os.WriteFile(canary, nil, 0o644)
	ref := push(t, startRegistry(t, nil), "x", imageOf(t, layerOf(t, false, fileE("a", "a", 0o644))), nil)
	_, err := Import(context.Background(), registrySource(t, ref), dst, nil)
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Import into an existing directory: %v, want ErrConflict", err)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Errorf("the existing directory was touched: %v", err)
	}
}

func TestImportCanceled(t *testing.T) {
	dst := newDst(t)
	ref := push(t, startRegistry(t, nil), "x", imageOf(t, fixtureLayers(t)...), nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Import(ctx, registrySource(t, ref), dst, func(p Progress) {
		if p.Layer == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Import canceled mid-way: %v, want context.Canceled", err)
	}
	mustNotExist(t, dst)
}
