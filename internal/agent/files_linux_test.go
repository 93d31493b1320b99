package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/runtime"
)

// fileServer serves a fresh Root with /home/user as workdir. outside is a
// sibling of Root holding a secret no file op may read or change.
func fileServer(t *testing.T) (c *Client, root, outside string) {
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "home/user"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, Config{UID: -1, GID: -1, Root: root, Workdir: "/home/user"}), root, outside
}

func readString(c *Client, p string) (string, error) {
	var b bytes.Buffer
	_, err := c.ReadFile(context.Background(), p, &b)
	return b.String(), err
}

func TestFileRoundTrip(t *testing.T) {
	c, root, _ := fileServer(t)
	ctx := context.Background()
	n, err := c.WriteFile(ctx, "notes.txt", strings.NewReader("hello"), 0o600)
	if err != nil || n != 5 {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	// Relative paths land in the workdir, inside Root.
	onDisk, err := os.ReadFile(filepath.Join(root, "home/user/notes.txt"))
	if err != nil || string(onDisk) != "hello" {
		t.Fatalf("on disk: %q, %v", onDisk, err)
	}
	if got, err := readString(c, "/home/user/notes.txt"); err != nil || got != "hello" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if _, err := c.WriteFile(ctx, "notes.txt", strings.NewReader("replaced"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := c.Stat(ctx, "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.FileInfo{Name: "notes.txt", Path: "/home/user/notes.txt", Size: 8, Mode: 0o640}
	if diff := cmp.Diff(want, fi, cmpopts.IgnoreFields(runtime.FileInfo{}, "ModTime")); diff != "" {
		t.Errorf("Stat (-want +got):\n%s", diff)
	}

	if err := c.MkdirAll(ctx, "/a/b/c", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll(ctx, "/a/b/c", 0); err != nil {
		t.Errorf("MkdirAll on an existing dir: %v", err)
	}
	if err := c.Rename(ctx, "notes.txt", "/a/b/moved.txt"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/moved.txt", filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListDir(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name, Link string
		IsDir      bool
	}
	var got []entry
	for _, e := range list {
		got = append(got, entry{e.Name, e.Link, e.IsDir})
	}
	wantList := []entry{{Name: "b", IsDir: true}, {Name: "link", Link: "b/moved.txt"}}
	if diff := cmp.Diff(wantList, got); diff != "" {
		t.Errorf("ListDir (-want +got):\n%s", diff)
	}

	if err := c.Remove(ctx, "/a", false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Remove non-empty dir without recursive = %v, want ErrExist", err)
	}
	if err := c.Remove(ctx, "/a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/a still there after recursive remove: %v", err)
	}
}

func TestFileErrors(t *testing.T) {
	c, root, _ := fileServer(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
		is   []error
	}{
		{"read missing", func() error { _, err := readString(c, "/missing"); return err },
			[]error{fs.ErrNotExist, runtime.ErrNotFound}},
		{"stat missing", func() error { _, err := c.Stat(ctx, "/missing"); return err },
			[]error{fs.ErrNotExist, runtime.ErrNotFound}},
		{"remove missing", func() error { return c.Remove(ctx, "/missing", true) }, []error{fs.ErrNotExist}},
		{"list missing", func() error { _, err := c.ListDir(ctx, "/missing"); return err }, []error{runtime.ErrNotFound}},
		{"write in missing dir", func() error {
			_, err := c.WriteFile(ctx, "/no/dir/f", strings.NewReader("x"), 0)
			return err
		}, []error{fs.ErrNotExist}},
		{"read dir", func() error { _, err := readString(c, "/home"); return err }, []error{syscall.EISDIR}},
		{"write over dir", func() error {
			_, err := c.WriteFile(ctx, "/home", strings.NewReader("x"), 0)
			return err
		}, []error{syscall.EISDIR}},
		{"list file", func() error { _, err := c.ListDir(ctx, "/file"); return err }, []error{syscall.ENOTDIR}},
		{"mkdir under file", func() error { return c.MkdirAll(ctx, "/file/sub", 0) }, []error{syscall.ENOTDIR}},
		{"read fifo", func() error { _, err := readString(c, "/fifo"); return err }, []error{runtime.ErrInvalid}},
		{"remove root", func() error { return c.Remove(ctx, "/", true) }, []error{runtime.ErrInvalid}},
		{"empty path", func() error { _, err := c.Stat(ctx, ""); return err }, []error{runtime.ErrInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			for _, want := range tt.is {
				if !errors.Is(err, want) {
					t.Errorf("error %v is not %v", err, want)
				}
			}
		})
	}
}

// Symlinks planted inside the sandbox must resolve inside Root, whatever
// they point at.
func TestSymlinkEscapes(t *testing.T) {
	c, root, outside := fileServer(t)
	ctx := context.Background()
	links := map[string]string{
		"abs":    filepath.Join(outside, "secret"), // absolute host path
		"passwd": "/etc/passwd",
		"up":     "../../../../../../..",
		"outdir": outside,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/abs", "/passwd", "/up/etc/passwd", "/outdir/secret", "/up" + outside + "/secret"} {
		if got, err := readString(c, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("read %s = %q, %v; want not found inside Root", p, got, err)
		}
	}
	// Writing through a dir symlink lands inside Root or fails, never outside.
	for _, p := range []string{"/outdir/pwned", "/up" + outside + "/pwned"} {
		c.WriteFile(ctx, p, strings.NewReader("x"), 0o644)
		c.MkdirAll(ctx, p+"-dir", 0o755)
	}
	// Writing to a symlink replaces the link, not its target.
	if _, err := c.WriteFile(ctx, "/abs", strings.NewReader("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "abs")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("after write, /abs is %v, %v; want a regular file", fi, err)
	}
	// Removing a symlink to a directory removes the link only.
	if err := c.Remove(ctx, "/outdir", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, "/passwd", "/renamed"); err != nil {
		t.Fatal(err)
	}
	if fi, err := c.Stat(ctx, "/renamed"); err != nil || fi.Link != "/etc/passwd" {
		t.Errorf("Stat of renamed link = %+v, %v", fi, err)
	}

	var names []string
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"secret"}, names); diff != "" {
		t.Errorf("outside Root changed (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "host secret" {
		t.Errorf("secret outside Root = %q", b)
	}
}

// blockingReader yields some data, then blocks until released.
type blockingReader struct {
	sent    bool
	release chan struct{}
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		return copy(p, "partial data"), nil
	}
	<-r.release
	return 0, io.ErrUnexpectedEOF
}

func tempFiles(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, ".airlock-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteAbortedLeavesNothing(t *testing.T) {
	c, root, _ := fileServer(t)
	dir := filepath.Join(root, "home/user")

	t.Run("dropped connection", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := &blockingReader{release: make(chan struct{})}
		defer close(r.release)
		done := make(chan error, 1)
		go func() { _, err := c.WriteFile(ctx, "f", r, 0o644); done <- err }()
		waitFor(t, "temp file", func() bool { return len(tempFiles(t, dir)) > 0 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("WriteFile = %v, want context.Canceled", err)
		}
		waitFor(t, "temp file removal", func() bool { return len(tempFiles(t, dir)) == 0 })
	})
	t.Run("reader error", func(t *testing.T) {
		r := &blockingReader{release: make(chan struct{})}
		close(r.release)
		if _, err := c.WriteFile(context.Background(), "f", r, 0o644); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("WriteFile = %v, want the reader's error", err)
		}
		waitFor(t, "temp file removal", func() bool { return len(tempFiles(t, dir)) == 0 })
	})
	if _, err := os.Lstat(filepath.Join(dir, "f")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("aborted write created its target: %v", err)
	}
}
