package quota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// setupBtrfsTest returns an FS in btrfs mode on a fresh image, unmounted
// and its loop device detached when the test ends. It skips where btrfs
// cannot be made, except in CI, which installs btrfs-progs.
func setupBtrfsTest(t testing.TB) *FS {
	t.Helper()
	testenv.RequiresRoot(t, "mount loop devices")
	if !btrfsUsable() {
		testenv.Lacking(t, "btrfs mode untestable: needs mkfs.btrfs (btrfs-progs) and btrfs in /proc/filesystems")
	}
	// Sparse, so the size costs nothing; deleted subvolumes hold 16 KiB
	// each until the kernel's cleaner drops them, and a benchmark deletes
	// tens of thousands.
	f, err := Setup(filepath.Join(t.TempDir(), "fs"), 8<<30)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if f.Mode() != "btrfs" {
		f.Close()
		t.Fatalf("Setup on an empty dir chose %s mode, want btrfs", f.Mode())
	}
	dev := loopOf(t, f.Dir())
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertDetached(t, dev)
	})
	return f
}

// TestBtrfsStructSizes pins the ioctl argument structs to the sizes in
// linux/btrfs.h, which their request numbers encode.
func TestBtrfsStructSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"btrfs_ioctl_vol_args", unsafe.Sizeof(btrfsVolArgs{}), 4096},
		{"btrfs_ioctl_vol_args_v2", unsafe.Sizeof(btrfsVolArgsV2{}), 4096},
		{"btrfs_ioctl_ino_lookup_args", unsafe.Sizeof(btrfsInoLookupArgs{}), 4096},
		{"btrfs_ioctl_quota_ctl_args", unsafe.Sizeof(btrfsQuotaCtlArgs{}), 16},
		{"btrfs_ioctl_qgroup_limit_args", unsafe.Sizeof(btrfsQgroupLimitArgs{}), 48},
		{"btrfs_ioctl_fs_info_args", unsafe.Sizeof(btrfsFSInfoArgs{}), 1024},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
	// _IOC(dir, 0x94, nr, size): bits 16-29 hold the size.
	for req, size := range map[uintptr]uintptr{
		btrfsIocSubvolCreate: 4096, btrfsIocSnapDestroy: 4096, btrfsIocSnapCreateV2: 4096, btrfsIocInoLookup: 4096,
		btrfsIocQuotaCtl: 16, btrfsIocQgroupLimit: 48, btrfsIocFSInfo: 1024,
	} {
		if got := req >> 16 & 0x3fff; got != size {
			t.Errorf("request %#x encodes size %d, want %d", req, got, size)
		}
	}
}

// TestBtrfsSubvolume checks what the runtime relies on: the directory it
// made keeps its owner and mode, usage shows at once, and after Clear the
// directory, its record and its bytes are gone.
func TestBtrfsSubvolume(t *testing.T) {
	f := setupBtrfsTest(t)
	dir := filepath.Join(f.Dir(), "sb")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 100000, 100000); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, 42, 64*mib); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Clear(42) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil || st.Uid != 100000 || st.Mode&0o7777 != 0o700 || st.Ino != btrfsFirstFreeObjectID {
		t.Errorf("limited dir: uid %d mode %o ino %d (%v), want 100000, 700, a subvolume root", st.Uid, st.Mode&0o7777, st.Ino, err)
	}
	var before unix.Statfs_t
	if err := unix.Statfs(f.Dir(), &before); err != nil {
		t.Fatal(err)
	}
	if n, err := fill(filepath.Join(dir, "f"), 8*mib); err != nil {
		t.Fatalf("wrote %d: %v", n, err)
	}
	// Not yet written back, the data counts against the limit already.
	if used, err := f.Usage(42); err != nil || used < 8*mib || used > 9*mib {
		t.Errorf("Usage = %d, %v; want about 8 MiB", used, err)
	}
	syncfs(t, f.Dir())
	var full unix.Statfs_t
	if err := unix.Statfs(f.Dir(), &full); err != nil {
		t.Fatal(err)
	}
	if used := int64(before.Bfree-full.Bfree) * full.Bsize; used < 8*mib {
		t.Fatalf("writing 8 MiB took %d bytes of the filesystem, want at least 8 MiB", used)
	}
	sv, _, _ := f.lookup(42)
	if err := f.Clear(42); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("limited dir after Clear: %v, want it gone", err)
	}
	if _, err := os.Lstat(f.recordPath(42)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record after Clear: %v, want it gone", err)
	}
	if _, err := f.Usage(42); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Usage after Clear: %v, want ErrNotExist", err)
	}
	qgroup := filepath.Join(f.btrfs.sysfs, "qgroups", fmt.Sprintf("0_%d", sv.id))
	// The kernel drops the subvolume in the background, then its qgroup,
	// when the transaction thread wakes the cleaner: every commit interval,
	// shortened here from 30 s to keep the test quick.
	if err := unix.Mount("", f.Dir(), "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, "commit=1"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, qgroup, 20*time.Second)
	syncfs(t, f.Dir())
	var after unix.Statfs_t
	if err := unix.Statfs(f.Dir(), &after); err != nil {
		t.Fatal(err)
	}
	if lost := (int64(before.Bfree) - int64(after.Bfree)) * after.Bsize; lost > mib {
		t.Errorf("after Clear the filesystem has %d bytes less free than before the sandbox wrote, want them back", lost)
	}
	var img unix.Stat_t
	if err := unix.Stat(f.Dir()+".img", &img); err == nil {
		t.Logf("image holds %d KiB of host disk", img.Blocks/2)
	}
}

func syncfs(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		t.Fatal(err)
	}
}

// waitGone polls, for at most max, until path no longer exists.
func waitGone(t *testing.T, path string, max time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < max {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			t.Logf("%s gone after %v", path, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s still there after %v", path, max)
}

func TestBtrfsLimitNeedsEmptyDir(t *testing.T) {
	f := setupBtrfsTest(t)
	dir := filepath.Join(f.Dir(), "full")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, 7, mib); err == nil {
		f.Clear(7)
		t.Fatal("Limit turned a directory with files into a subvolume")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "kept")); err != nil || string(b) != "x" {
		t.Errorf("after refused Limit: %q, %v; want the file kept", b, err)
	}
	if err := f.Limit(filepath.Join(t.TempDir(), "x"), 7, mib); err == nil {
		t.Error("Limit accepted a directory outside Dir")
	}
}

// TestBtrfsRelimit checks that a second Limit of the same subvolume moves
// its limit, as a sandbox taken from the warm pool needs.
func TestBtrfsRelimit(t *testing.T) {
	f := setupBtrfsTest(t)
	dir := project(t, f, "sb", 5, 8*mib)
	if err := f.Limit(dir, 5, 24*mib); err != nil {
		t.Fatal(err)
	}
	if n, err := fill(filepath.Join(dir, "f"), 16*mib); err != nil {
		t.Errorf("under the raised limit: wrote %d: %v", n, err)
	}
	if err := f.Limit(dir, 6, 24*mib); err == nil {
		t.Error("Limit let another project take the subvolume")
	}
}

// TestBtrfsRestart checks that a restarted daemon, with a fresh FS, finds
// a subvolume an earlier one limited, both while the filesystem stays
// mounted and after it was unmounted.
func TestBtrfsRestart(t *testing.T) {
	f := setupBtrfsTest(t)
	for i, name := range []string{"a", "b"} {
		id := uint32(10 + i)
		dir := filepath.Join(f.Dir(), name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := f.Limit(dir, id, 32*mib); err != nil {
			t.Fatal(err)
		}
		if n, err := fill(filepath.Join(dir, "f"), 4*mib); err != nil {
			t.Fatalf("wrote %d: %v", n, err)
		}
	}
	again, err := Setup(f.Dir(), 512*mib)
	if err != nil || again.Mode() != "btrfs" {
		t.Fatalf("Setup on the mounted dir: %v, %v; want btrfs mode", again, err)
	}
	if used, err := again.Usage(10); err != nil || used < 4*mib {
		t.Errorf("Usage after restart = %d, %v; want >= 4 MiB", used, err)
	}
	if err := again.Clear(10); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.Dir(), "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Clear by a fresh FS: %v, want the dir gone", err)
	}

	dev := loopOf(t, f.Dir())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A sandbox another package's test starts meanwhile copies the host's
	// mounts, keeping this filesystem alive unflushed after the unmount;
	// mounting the image again before it lets go would read stale data.
	waitReleased(t, dev)
	again, err = Setup(f.Dir(), 512*mib)
	if err != nil || again.Mode() != "btrfs" {
		t.Fatalf("Setup after unmount: %v, %v; want btrfs mode", again, err)
	}
	f.source = again.source // the cleanup unmounts and checks the new device
	if b, err := os.ReadFile(filepath.Join(f.Dir(), "b", "f")); err != nil || len(b) != 4*mib {
		t.Errorf("after remount: %d bytes, %v; want the 4 MiB written before", len(b), err)
	}
	if err := again.Clear(11); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(f.Dir())
	if names := dirNames(entries); len(names) != 0 {
		t.Errorf("after clearing both: Dir holds %v, want nothing", names)
	}
}

func dirNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return slices.Clip(names)
}

// TestSetupKeepsImageModeDir checks that Setup does not mount btrfs over a
// directory an image-mode daemon filled: that would hide its sandboxes.
func TestSetupKeepsImageModeDir(t *testing.T) {
	requiresRoot(t)
	if !btrfsUsable() {
		testenv.Lacking(t, "needs mkfs.btrfs (btrfs-progs)")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sandbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := Setup(dir, 512*mib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Mode() == "btrfs" {
		t.Errorf("Setup mounted btrfs over a directory holding sandboxes")
	}
}
