package quota

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const mib = 1 << 20

// setup mounts a fresh 512 MiB quota filesystem that is unmounted, and its
// loop device released, when the test ends however it ends.
func setup(t *testing.T) *FS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root: mounts a loop device")
	}
	if ok, detail := Detect(filepath.Join(t.TempDir(), "probe")); !ok {
		t.Skipf("requires disk quota support: %s", detail)
	}
	dir := filepath.Join(t.TempDir(), "fs")
	f, err := Setup(dir, 512*mib)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// project makes a directory on f limited to limit bytes.
func project(t *testing.T, f *FS, name string, id uint32, limit int64) string {
	t.Helper()
	dir := filepath.Join(f.Dir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, id, limit); err != nil {
		t.Fatalf("Limit: %v", err)
	}
	return dir
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// fill writes zeros to path until a write fails or max bytes are written.
func fill(t *testing.T, path string, max int64) (int64, error) {
	t.Helper()
	w, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, io.LimitReader(zeros{}, max))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func overQuota(err error) bool {
	return errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.ENOSPC)
}

func TestLimitStopsWrites(t *testing.T) {
	f := setup(t)
	a := project(t, f, "a", 1001, 32*mib)
	b := project(t, f, "b", 1002, 256*mib)

	n, err := fill(t, filepath.Join(a, "file"), 64*mib)
	if !overQuota(err) {
		t.Fatalf("writing 64 MiB under a 32 MiB limit: wrote %d, err %v; want EDQUOT or ENOSPC", n, err)
	}
	if n > 32*mib || n < 30*mib {
		t.Errorf("wrote %d bytes before the limit, want close to 32 MiB and not above", n)
	}
	used, err := f.Usage(1001)
	if err != nil {
		t.Fatal(err)
	}
	if used < n || used > 32*mib {
		t.Errorf("Usage = %d, want between %d written and the 32 MiB limit", used, n)
	}

	// Another project is unaffected, and subdirectories inherit it.
	if err := os.Mkdir(filepath.Join(b, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err := fill(t, filepath.Join(b, "sub", "file"), 40*mib); err != nil {
		t.Fatalf("project b: wrote %d: %v", n, err)
	}
	if used, err := f.Usage(1002); err != nil || used < 40*mib {
		t.Errorf("Usage(b) = %d, %v; want >= 40 MiB counted through the subdirectory", used, err)
	}

	// Clearing lifts the limit.
	if err := f.Clear(1001); err != nil {
		t.Fatal(err)
	}
	if n, err := fill(t, filepath.Join(a, "more"), 8*mib); err != nil {
		t.Errorf("after Clear: wrote %d: %v", n, err)
	}
}

func TestLimitRefuses(t *testing.T) {
	f := setup(t)
	dir := filepath.Join(f.Dir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, 0, mib); err == nil {
		t.Error("Limit accepted project 0")
	}
	if err := f.Limit(t.TempDir(), 7, mib); err == nil {
		t.Error("Limit accepted a directory on another filesystem")
	}
}

func TestLimitThroughOverlay(t *testing.T) {
	f := setup(t)
	layer := project(t, f, "sandbox", 1003, 16*mib)
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lower, merged := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(lower, "base"), []byte("from the template\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, 0); err != nil {
			t.Errorf("unmount overlay: %v", err)
		}
	})

	// A copy-up lands in the project too.
	base, err := os.OpenFile(filepath.Join(merged, "base"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base.WriteString("changed\n"); err != nil {
		t.Fatal(err)
	}
	base.Close()
	n, err := fill(t, filepath.Join(merged, "big"), 64*mib)
	if !overQuota(err) || n > 16*mib {
		t.Fatalf("overlay write: wrote %d, err %v; want EDQUOT or ENOSPC by 16 MiB", n, err)
	}
	var x fsxattr
	d, err := os.Open(filepath.Join(upper, "base"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := ioctl(d, fsIOCGetXattr, &x); err != nil || x.Projid != 1003 {
		t.Errorf("copied-up file: project %d, %v; want 1003", x.Projid, err)
	}
}

func TestCloseDetachesAndSetupRemounts(t *testing.T) {
	f := setup(t)
	if err := os.WriteFile(filepath.Join(f.Dir(), "kept"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// While mounted, a second Setup (a restarted daemon) reuses the mount.
	again, err := Setup(f.Dir(), 512*mib)
	if err != nil || again.source != f.source {
		t.Fatalf("Setup on a mounted dir: %v, %v; want the mount on %s", again, err, f.source)
	}
	if ok, detail := Detect(f.Dir()); !ok {
		t.Errorf("Detect on the mount: %s", detail)
	}
	img := f.Dir() + ".img"
	var st unix.Stat_t
	if err := unix.Stat(img, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 64*mib {
		t.Errorf("512 MiB image uses %d bytes of host disk, want a sparse image", used)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	backing := filepath.Join("/sys/block", filepath.Base(f.source), "loop", "backing_file")
	if !eventually(func() bool { _, err := os.Stat(backing); return err != nil }) {
		b, _ := os.ReadFile(backing)
		t.Errorf("%s still bound to %s after Close", f.source, strings.TrimSpace(string(b)))
	}

	// After Close the image is mounted again, not formatted again.
	f2, err := Setup(f.Dir(), 512*mib)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if b, err := os.ReadFile(filepath.Join(f2.Dir(), "kept")); err != nil || string(b) != "data" {
		t.Errorf("after remount: %q, %v; want the data written before", b, err)
	}
}

// eventually waits a bounded while for cond: loop autoclear may run just
// after umount returns.
func eventually(cond func() bool) bool {
	for range 500 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
