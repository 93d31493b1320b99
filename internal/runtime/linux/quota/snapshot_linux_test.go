package quota

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// node is what the tests compare of one entry of a tree.
type node struct {
	Type     string
	Perm     uint32 // with setuid, setgid, sticky
	UID, GID uint32
	Mtime    time.Time
	Size     int64  // of a regular file
	SHA256   string // of a regular file
	Target   string // of a symlink
	Rdev     uint64 // of a device node
	Xattrs   map[string]string
	LinkOf   string // for the second and later names of a file: its first
}

// describe returns the entries of the tree at root by their path in it.
func describe(t *testing.T, root string) map[string]node {
	t.Helper()
	nodes := map[string]node{}
	first := map[uint64]string{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n := node{Perm: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, Mtime: time.Unix(st.Mtim.Unix()).UTC(), Xattrs: xattrs(t, p)}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			n.Type = "dir"
		case unix.S_IFREG:
			n.Type, n.Size, n.SHA256 = "file", st.Size, sum(t, p)
		case unix.S_IFLNK:
			n.Type = "symlink"
			n.Target, err = os.Readlink(p)
		case unix.S_IFCHR:
			n.Type, n.Rdev = "char", st.Rdev
		default:
			n.Type = fmt.Sprintf("mode %o", st.Mode&unix.S_IFMT)
		}
		if n.Type != "dir" && st.Nlink > 1 {
			if f, ok := first[st.Ino]; ok {
				n.LinkOf = f
			} else {
				first[st.Ino] = rel
			}
		}
		nodes[rel] = n
		return err
	})
	if err != nil {
		t.Fatalf("describe %s: %v", root, err)
	}
	return nodes
}

func sum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func xattrs(t *testing.T, path string) map[string]string {
	t.Helper()
	names, err := listXattrs(path)
	if err != nil {
		t.Fatalf("list xattrs of %s: %v", path, err)
	}
	m := map[string]string{}
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") {
			continue
		}
		v, err := getXattr(path, name)
		if err != nil {
			t.Fatalf("get xattr %s of %s: %v", name, path, err)
		}
		m[name] = string(v)
	}
	return m
}

const header = "old header"

// populate fills dir as a sandbox's layer looks: an overlay upper dir with
// a big file, a sparse one, hardlinks, symlinks, a whiteout, an opaque
// directory, files of the sandbox's uid and a setuid one; a work dir; and a
// FIFO and a socket that a snapshot leaves out.
func populate(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	upper := filepath.Join(dir, "upper")
	for _, d := range []string{upper, filepath.Join(upper, "opaque"), filepath.Join(dir, "work", "work")} {
		must(os.MkdirAll(d, 0o755))
	}
	in := func(name string) string { return filepath.Join(upper, name) }
	big := in("big")
	if n, err := fill(big, 50*mib); err != nil {
		t.Fatalf("wrote %d: %v", n, err)
	}
	f, err := os.OpenFile(big, os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteAt([]byte(header), 0)
	must(errors.Join(err, f.Close()))
	f, err = os.Create(in("sparse"))
	must(err)
	_, err = f.WriteAt(bytes.Repeat([]byte("x"), 4096), 50*mib)
	must(errors.Join(err, f.Truncate(100*mib), f.Close()))
	must(os.WriteFile(in("a"), []byte("linked"), 0o644))
	must(os.Link(in("a"), in("a-link")))
	must(os.Symlink("big", in("link")))
	must(os.Symlink("/etc/shadow", in("abs")))
	must(unix.Mknod(in("gone"), unix.S_IFCHR|0o000, 0))
	must(unix.Lsetxattr(in("opaque"), "user.overlay.opaque", []byte("y"), 0))
	must(os.WriteFile(in("opaque/inside"), []byte("upper"), 0o644))
	must(os.WriteFile(in("trusted"), nil, 0o644))
	must(unix.Lsetxattr(in("trusted"), "trusted.airlock", []byte("t"), 0))
	must(os.WriteFile(in("suid"), []byte("#!/bin/sh\n"), 0o755))
	must(unix.Mkfifo(in("fifo"), 0o644))
	must(unix.Mknod(in("sock"), unix.S_IFSOCK|0o755, 0))
	must(os.WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o600))
	for _, name := range []string{"big", "a", "link", "abs", "gone", "opaque", "opaque/inside", "suid", "."} {
		must(os.Lchown(in(name), 101000, 101000))
	}
	must(os.Chmod(in("suid"), 0o4755))
	must(os.Chmod(filepath.Join(dir, "work", "work"), 0))
	past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(unix.UtimesNanoAt(unix.AT_FDCWD, in("abs"), []unix.Timespec{unix.NsecToTimespec(past.UnixNano()), unix.NsecToTimespec(past.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW))
	for _, name := range []string{"a", "opaque", "gone", "."} {
		must(os.Chtimes(in(name), past, past))
	}
}

// copied is what a copy of a tree populated at dir (in it) holds: all but
// the FIFO and the socket.
func copied(nodes map[string]node, dir string) map[string]node {
	delete(nodes, filepath.Join(dir, "fifo"))
	delete(nodes, filepath.Join(dir, "sock"))
	return nodes
}

func readHeader(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, len(header))
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSnapshotAdopt(t *testing.T) {
	forEachMode(t, func(t *testing.T, f *FS) {
		src := project(t, f, "src", 1001, 256*mib)
		populate(t, src)
		want := describe(t, src)
		if f.Mode() != "btrfs" { // a btrfs snapshot keeps all there was
			want = copied(want, "upper")
		}
		snaps := filepath.Join(f.Dir(), ".snapshots")
		if err := os.Mkdir(snaps, 0o700); err != nil {
			t.Fatal(err)
		}
		snap := filepath.Join(snaps, "s1")
		start := time.Now()
		if err := f.Snapshot(src, snap); err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		t.Logf("%s mode: snapshot of %d entries in %v", f.Mode(), len(want), time.Since(start).Round(time.Millisecond))

		// The original changes; the snapshot keeps what it was.
		big, err := os.OpenFile(filepath.Join(src, "upper", "big"), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = big.WriteAt([]byte("new header"), 0)
		if err := errors.Join(err, big.Close(), os.Remove(filepath.Join(src, "upper", "a")), os.WriteFile(filepath.Join(src, "upper", "new"), []byte("x"), 0o644)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, describe(t, snap)); diff != "" {
			t.Errorf("snapshot differs from the tree it was taken of (-want +got):\n%s", diff)
		}
		if got := readHeader(t, filepath.Join(snap, "upper", "big")); got != header {
			t.Errorf("snapshot's big file starts %q, want %q from before the change", got, header)
		}
		// Holes stay holes: the 100 MiB sparse file holds 4 KiB.
		if used, err := DiskUsage(snap); err != nil || used < 50*mib || used > 52*mib {
			t.Errorf("DiskUsage(snapshot) = %d, %v; want about the 50 MiB written", used, err)
		}

		assertAdopts(t, f, snap, want)

		again := filepath.Join(snaps, "s2")
		if err := f.Snapshot(src, again); err != nil {
			t.Fatal(err)
		}
		if got := readHeader(t, filepath.Join(again, "upper", "big")); got != "new header" {
			t.Errorf("second snapshot's big file starts %q, want the change", got)
		}
		for range 2 { // idempotent
			if err := f.RemoveSnapshot(again); err != nil {
				t.Fatalf("RemoveSnapshot: %v", err)
			}
		}
		if _, err := os.Lstat(again); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after RemoveSnapshot: %v, want it gone", err)
		}
	})
}

// assertAdopts moves snap into Dir, adopts it as project 1002 and checks
// that it keeps what it held, serves as an overlay's upper layer, and is
// bounded by its limit.
func assertAdopts(t *testing.T, f *FS, snap string, want map[string]node) {
	t.Helper()
	adopted := filepath.Join(f.Dir(), "adopted")
	if err := os.Rename(snap, adopted); err != nil {
		t.Fatal(err)
	}
	const limit = 128 * mib
	if err := f.Adopt(adopted, 1002, limit); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	t.Cleanup(func() {
		if err := errors.Join(f.Clear(1002), os.RemoveAll(adopted)); err != nil {
			t.Errorf("Clear adopted: %v", err)
		}
	})
	if diff := cmp.Diff(want, describe(t, adopted)); diff != "" {
		t.Errorf("adopted snapshot differs (-want +got):\n%s", diff)
	}
	assertOverlay(t, adopted)

	n, ferr := fill(filepath.Join(adopted, "more"), 2*limit)
	if !overQuota(ferr) || n > limit {
		t.Errorf("writing %d MiB into the adopted snapshot limited to %d MiB: wrote %d, %v; want EDQUOT or ENOSPC within the limit", 2*limit/mib, limit/mib, n, ferr)
	}
	used, err := f.Usage(1002)
	t.Logf("adopted: wrote %.1f MiB more before %v; Usage %.1f MiB", float64(n)/mib, ferr, float64(used)/mib)
	if err != nil || used < n || used > limit {
		t.Errorf("Usage(adopted) = %d, %v; want between the %d bytes written and the limit", used, err, n)
	}
}

// assertOverlay mounts an overlay with the adopted layer's upper and work
// dirs on a lower dir, as the runtime does, and checks that the whiteout
// and the opaque directory still hide what they hid.
func assertOverlay(t *testing.T, layer string) {
	t.Helper()
	lower, merged := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"gone": "deleted in the sandbox", "opaque/hidden": "hidden by the opaque dir", "kept": "lower"} {
		p := filepath.Join(lower, name)
		if err := errors.Join(os.MkdirAll(filepath.Dir(p), 0o755), os.WriteFile(p, []byte(data), 0o644)); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, filepath.Join(layer, "upper"), filepath.Join(layer, "work"))
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay on the adopted layer: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, 0); err != nil {
			t.Errorf("unmount overlay: %v", err)
		}
	})
	for name, want := range map[string]string{"gone": "", "opaque/hidden": "", "opaque/inside": "upper", "kept": "lower", "a-link": "linked"} {
		b, err := os.ReadFile(filepath.Join(merged, name))
		if want == "" && !errors.Is(err, fs.ErrNotExist) || want != "" && string(b) != want {
			t.Errorf("overlay %s: %q, %v; want %q", name, b, err, want)
		}
	}
}

// TestSnapshotRefuses checks the calls that must fail, and that they leave
// nothing behind.
func TestSnapshotRefuses(t *testing.T) {
	forEachMode(t, func(t *testing.T, f *FS) {
		src := project(t, f, "src", 1001, 16*mib)
		if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		taken := filepath.Join(f.Dir(), "taken")
		if err := os.Mkdir(taken, 0o755); err != nil {
			t.Fatal(err)
		}
		outside := tmpfs(t)
		for _, c := range []struct {
			name     string
			src, dst string
		}{
			{"dst exists", src, taken},
			{"dst off the FS", src, filepath.Join(outside, "s")},
			{"no parent", src, filepath.Join(f.Dir(), "none", "s")},
			{"no src", filepath.Join(f.Dir(), "none"), filepath.Join(f.Dir(), "s")},
			{"dst in src", taken, filepath.Join(taken, "s")},
		} {
			if err := f.Snapshot(c.src, c.dst); err == nil {
				t.Errorf("%s: Snapshot(%s, %s) succeeded", c.name, c.src, c.dst)
			}
			if c.dst != taken {
				if _, err := os.Lstat(c.dst); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: after a failed Snapshot: %v, want nothing at dst", c.name, err)
				}
			}
		}
		if entries, _ := os.ReadDir(taken); len(entries) != 0 {
			t.Errorf("Snapshot onto an existing dir wrote %v into it", dirNames(entries))
		}
		if err := f.RemoveSnapshot(src); err == nil {
			t.Errorf("RemoveSnapshot removed the limited dir of project 1001")
		}
		if b, err := os.ReadFile(filepath.Join(src, "f")); err != nil || string(b) != "x" {
			t.Errorf("after a refused RemoveSnapshot of a limited dir: %q, %v; want its file kept", b, err)
		}
		if err := f.RemoveSnapshot(outside); err == nil {
			t.Errorf("RemoveSnapshot of a directory off the FS succeeded")
		}
		if _, err := os.Stat(outside); err != nil {
			t.Errorf("RemoveSnapshot of a directory off the FS removed it: %v", err)
		}
		if err := f.Snapshot(src, filepath.Join(f.Dir(), "s")); err != nil {
			t.Fatal(err)
		}
		defer f.RemoveSnapshot(filepath.Join(f.Dir(), "s"))
		if err := f.Adopt(filepath.Join(f.Dir(), "s"), 0, mib); err == nil {
			t.Error("Adopt accepted project 0")
		}
		if err := f.Adopt(src, 1002, mib); err == nil {
			f.Clear(1002)
			t.Error("Adopt gave the limited dir of project 1001 to project 1002 too")
		}
	})
}

// TestAdoptUnwinds checks that a snapshot too big for its new limit stays
// as it was when Adopt fails, where Adopt copies (image mode).
func TestAdoptUnwinds(t *testing.T) {
	f := setup(t, "image")
	src := project(t, f, "src", 1001, 256*mib)
	populate(t, src)
	want := copied(describe(t, src), "upper")
	snap := filepath.Join(f.Dir(), "small")
	if err := f.Snapshot(src, snap); err != nil {
		t.Fatal(err)
	}
	if err := f.Adopt(snap, 1003, 16*mib); err == nil {
		f.Clear(1003)
		t.Fatal("Adopt fitted a 50 MiB tree into a 16 MiB limit")
	} else if !overQuota(err) {
		t.Errorf("Adopt: %v, want ENOSPC", err)
	}
	if diff := cmp.Diff(want, describe(t, snap)); diff != "" {
		t.Errorf("after a failed Adopt (-want +got):\n%s", diff)
	}
	if _, ok, _ := mountAt(snap); ok {
		t.Error("after a failed Adopt an image is still mounted on the snapshot")
	}
	entries, _ := os.ReadDir(f.Dir())
	for _, name := range dirNames(entries) {
		if strings.Contains(name, "adopt") || strings.Contains(name, "1003") {
			t.Errorf("after a failed Adopt %s is left in Dir", name)
		}
	}
}

// TestBtrfsSnapshotPlainDir snapshots a directory that is not a subvolume,
// which btrfs mode copies (sharing the extents), and adopts the copy.
func TestBtrfsSnapshotPlainDir(t *testing.T) {
	f := setupBtrfsTest(t)
	src := project(t, f, "src", 1001, 256*mib)
	populate(t, src)
	upper := filepath.Join(src, "upper")
	want := copied(describe(t, upper), ".")
	snap := filepath.Join(f.Dir(), "upper-copy")
	start := time.Now()
	if err := f.Snapshot(upper, snap); err != nil {
		t.Fatal(err)
	}
	t.Logf("copied %d entries with reflinks in %v", len(want), time.Since(start).Round(time.Millisecond))
	if diff := cmp.Diff(want, describe(t, snap)); diff != "" {
		t.Errorf("copy differs (-want +got):\n%s", diff)
	}
	if err := f.Adopt(snap, 1002, 64*mib); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	t.Cleanup(func() { f.Clear(1002) })
	var st unix.Stat_t
	if err := unix.Stat(snap, &st); err != nil || st.Ino != btrfsFirstFreeObjectID {
		t.Errorf("adopted copy: inode %d, %v; want the root of a subvolume", st.Ino, err)
	}
	if diff := cmp.Diff(want, describe(t, snap)); diff != "" {
		t.Errorf("adopted copy differs (-want +got):\n%s", diff)
	}
	if n, err := fill(filepath.Join(snap, "more"), 128*mib); !overQuota(err) || n > 64*mib {
		t.Errorf("wrote %d past a 64 MiB limit: %v; want EDQUOT", n, err)
	}
}

// TestBtrfsSnapshotLarge logs what snapshotting a subvolume holding 1 GiB
// takes, with its data still dirty and then written back. Timing is
// logged, not asserted: a loaded machine would fail a bound.
func TestBtrfsSnapshotLarge(t *testing.T) {
	f := setupBtrfsTest(t)
	src := project(t, f, "src", 1001, 2<<30)
	if n, err := fill(filepath.Join(src, "big"), 1<<30); err != nil {
		t.Fatalf("wrote %d: %v", n, err)
	}
	snaps := filepath.Join(f.Dir(), ".snapshots")
	if err := os.Mkdir(snaps, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flush bool
	}{{"dirty", false}, {"written back", true}} {
		if c.flush {
			syncfs(t, f.Dir())
		}
		snap := filepath.Join(snaps, strings.ReplaceAll(c.name, " ", "-"))
		start := time.Now()
		if err := f.Snapshot(src, snap); err != nil {
			t.Fatal(err)
		}
		t.Logf("snapshot of 1 GiB, %s: %v", c.name, time.Since(start).Round(time.Microsecond))
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(snap, "big"), &st); err != nil || st.Size != 1<<30 {
			t.Errorf("snapshot's file: %d bytes, %v; want 1 GiB", st.Size, err)
		}
		if err := f.RemoveSnapshot(snap); err != nil {
			t.Fatal(err)
		}
	}
}

// tmpfs returns a directory on a filesystem of its own, unmounted when the
// test ends.
func tmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount tmpfs: %v", err)
		}
	})
	return dir
}
