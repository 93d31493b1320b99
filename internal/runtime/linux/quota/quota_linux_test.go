package quota

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

const mib = 1 << 20

func requiresRoot(t *testing.T) {
	t.Helper()
	testenv.RequiresRoot(t, "mount loop devices")
	if _, err := findMkfs("ext4"); err != nil {
		testenv.Lacking(t, err.Error())
	}
}

// setup returns an FS in the given mode ("btrfs", "project" or "image")
// that is torn down when the test ends, however it ends. Project mode needs
// a kernel with ext4 quota support; the test skips without one.
func setup(t *testing.T, mode string) *FS {
	t.Helper()
	requiresRoot(t)
	switch mode {
	case "image":
		return &FS{dir: t.TempDir(), images: true}
	case "btrfs":
		return setupBtrfsTest(t)
	}
	works, err := projectQuotaWorks(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	if !works {
		testenv.Unsupported(t, "the kernel cannot mount ext4 with prjquota (built without CONFIG_QFMT_V2): project mode untestable")
	}
	f, err := Setup(filepath.Join(t.TempDir(), "fs"), 512*mib)
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

// forEachMode runs test in both modes.
func forEachMode(t *testing.T, test func(t *testing.T, f *FS)) {
	for _, mode := range []string{"btrfs", "project", "image"} {
		t.Run(mode, func(t *testing.T) { test(t, setup(t, mode)) })
	}
}

// project makes a directory on f limited to limit bytes, released when the
// test ends.
func project(t *testing.T, f *FS, name string, id uint32, limit int64) string {
	t.Helper()
	dir := filepath.Join(f.Dir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, id, limit); err != nil {
		t.Fatalf("Limit: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Clear(id); err != nil {
			t.Errorf("Clear: %v", err)
		}
	})
	return dir
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// fill writes zeros to path until a write fails or max bytes are written.
func fill(path string, max int64) (int64, error) {
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
	forEachMode(t, func(t *testing.T, f *FS) {
		a := project(t, f, "a", 1001, 32*mib)
		b := project(t, f, "b", 1002, 256*mib)

		n, err := fill(filepath.Join(a, "file"), 64*mib)
		if !overQuota(err) {
			t.Fatalf("writing 64 MiB under a 32 MiB limit: wrote %d, err %v; want EDQUOT or ENOSPC", n, err)
		}
		// Image mode loses some of the limit to filesystem metadata.
		if n > 32*mib || n < 28*mib {
			t.Errorf("wrote %d bytes before the limit, want close to 32 MiB and not above", n)
		}
		used, err := f.Usage(1001)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %.2f MiB before %v; Usage %.2f MiB", float64(n)/mib, err, float64(used)/mib)
		if used < n || used > 32*mib {
			t.Errorf("Usage = %d, want between %d written and the 32 MiB limit", used, n)
		}

		// Another project is unaffected, and subdirectories count.
		if err := os.Mkdir(filepath.Join(b, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if n, err := fill(filepath.Join(b, "sub", "file"), 40*mib); err != nil {
			t.Fatalf("project b: wrote %d: %v", n, err)
		}
		if used, err := f.Usage(1002); err != nil || used < 40*mib {
			t.Errorf("Usage(b) = %d, %v; want >= 40 MiB counted through the subdirectory", used, err)
		}
	})
}

func TestClearLiftsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, f *FS) {
		a := project(t, f, "a", 1001, 16*mib)
		if _, err := fill(filepath.Join(a, "file"), 32*mib); !overQuota(err) {
			t.Fatalf("want the limit hit first, got %v", err)
		}
		if err := f.Clear(1001); err != nil {
			t.Fatal(err)
		}
		if err := f.Clear(1001); err != nil {
			t.Fatalf("second Clear: %v", err)
		}
		if f.btrfs != nil {
			// The subvolume went with its limit; the caller's RemoveAll
			// finds nothing to do.
			if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("limited dir after Clear: %v, want it gone", err)
			}
			if err := os.RemoveAll(a); err != nil {
				t.Errorf("RemoveAll after Clear: %v", err)
			}
			return
		}
		if n, err := fill(filepath.Join(a, "more"), 24*mib); err != nil {
			t.Errorf("after Clear: wrote %d: %v", n, err)
		}
	})
}

func TestLimitRefuses(t *testing.T) {
	forEachMode(t, func(t *testing.T, f *FS) {
		dir := filepath.Join(f.Dir(), "d")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := f.Limit(dir, 0, mib); err == nil {
			t.Error("Limit accepted project 0")
		}
		if err := f.Limit(dir, 5, 0); err == nil {
			t.Error("Limit accepted a zero size")
		}
		if f.images {
			return
		}
		if err := f.Limit(t.TempDir(), 7, mib); err == nil {
			t.Error("Limit accepted a directory on another filesystem")
		}
	})
}

func TestLimitThroughOverlay(t *testing.T) {
	forEachMode(t, func(t *testing.T, f *FS) {
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
		n, err := fill(filepath.Join(merged, "big"), 64*mib)
		if !overQuota(err) || n > 16*mib || n < 12*mib {
			t.Fatalf("overlay write: wrote %d, err %v; want EDQUOT or ENOSPC close to 16 MiB", n, err)
		}
		if f.btrfs != nil {
			// A subvolume nested in the layer would have a qgroup of its
			// own, outside the limit; overlayfs does not pass the ioctl on.
			d, err := os.Open(merged)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := createSubvolume(d, "escape"); err == nil {
				t.Error("made a subvolume through the overlay: it would escape the limit")
			}
		}
		if f.Mode() != "project" {
			return
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
	})
}

// TestImageSparseAndReleased checks the host side of image mode: the image
// costs only what was written, the directory keeps its owner, and Clear
// frees the loop device and the file.
func TestImageSparseAndReleased(t *testing.T) {
	f := setup(t, "image")
	dir := filepath.Join(f.Dir(), "sb")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 100000, 100000); err != nil {
		t.Fatal(err)
	}
	if err := f.Limit(dir, 42, 1<<30); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Clear(42) })
	if n, err := fill(filepath.Join(dir, "f"), 8*mib); err != nil {
		t.Fatalf("wrote %d: %v", n, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil || st.Uid != 100000 || st.Mode&0o777 != 0o750 {
		t.Errorf("limited dir: uid %d mode %o (%v), want 100000 and 750", st.Uid, st.Mode&0o777, err)
	}
	img := f.imagePath(42)
	if err := unix.Stat(img, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 32*mib {
		t.Errorf("1 GiB image holding 8 MiB uses %d bytes of host disk, want it sparse", used)
	}
	mnt, _, err := f.imageMount(42)
	if err != nil || mnt != dir {
		t.Fatalf("imageMount = %q, %v; want %s", mnt, err, dir)
	}
	dev := loopOf(t, dir)
	if err := f.Clear(42); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image still there after Clear: %v", err)
	}
	assertDetached(t, dev)
}

func TestSetupSharedRemounts(t *testing.T) {
	f := setup(t, "project")
	if err := os.WriteFile(filepath.Join(f.Dir(), "kept"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// While mounted, a second Setup (a restarted daemon) reuses the mount.
	again, err := Setup(f.Dir(), 512*mib)
	if err != nil || again.source != f.source || again.images {
		t.Fatalf("Setup on a mounted dir: %+v, %v; want the mount on %s", again, err, f.source)
	}
	if ok, detail := Detect(f.Dir()); !ok {
		t.Errorf("Detect on the mount: %s", detail)
	}
	var st unix.Stat_t
	if err := unix.Stat(f.Dir()+".img", &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 64*mib {
		t.Errorf("512 MiB image uses %d bytes of host disk, want a sparse image", used)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	assertDetached(t, f.source)

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

// TestSetupMatchesDetect checks that Setup picks the mode Detect announces.
func TestSetupMatchesDetect(t *testing.T) {
	requiresRoot(t)
	dir := filepath.Join(t.TempDir(), "fs")
	ok, detail := Detect(dir)
	if !ok {
		t.Fatalf("Detect as root with mkfs.ext4: %s", detail)
	}
	f, err := Setup(dir, 512*mib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := f.Mode() == "image"; strings.Contains(detail, "per sandbox") != want {
		t.Errorf("Setup chose %s mode, Detect said %q", f.Mode(), detail)
	}
	if want := f.Mode() == "btrfs"; strings.Contains(detail, "btrfs") != want {
		t.Errorf("Setup chose %s mode, Detect said %q", f.Mode(), detail)
	}
}

func loopOf(t testing.TB, dir string) string {
	t.Helper()
	m, ok, err := mountAt(dir)
	if err != nil || !ok || !strings.HasPrefix(m.Source, "/dev/loop") {
		t.Fatalf("mount at %s: %+v %v %v", dir, m, ok, err)
	}
	return m.Source
}

// assertDetached waits a bounded while for dev to lose its backing file:
// loop autoclear may finish just after umount returns.
func assertDetached(t testing.TB, dev string) {
	t.Helper()
	backing := filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file")
	// Autoclear runs when the last reference to the filesystem goes, which
	// btrfs may hold a while after unmount (its cleaner finishing deleted
	// subvolumes): a generous bound, since this checks for a leak, not speed.
	for range 3000 {
		if _, err := os.Stat(backing); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(backing)
	// A mount namespace cloned by another package's test while this
	// filesystem was mounted (every sandbox's starts as a copy of the
	// host's) keeps it, and so the loop device, until that namespace is
	// done with it: not a leak of this package's.
	if holders := mountHolders(dev); len(holders) > 0 {
		t.Logf("%s still bound to %s, held by the mount namespaces of pids %v", dev, strings.TrimSpace(string(b)), holders)
		return
	}
	t.Errorf("%s still bound to %s", dev, strings.TrimSpace(string(b)))
}

// waitReleased waits (boundedly) until no other process's mount table
// shows dev.
func waitReleased(t testing.TB, dev string) {
	t.Helper()
	for range 3000 {
		if len(mountHolders(dev)) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%s still held by pids %v", dev, mountHolders(dev))
}

// mountHolders lists the other processes whose mount table shows dev.
func mountHolders(dev string) []string {
	var out []string
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if filepath.Base(d) == self {
			continue
		}
		if b, err := os.ReadFile(d + "/mountinfo"); err == nil && strings.Contains(string(b), " "+dev+" ") {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// BenchmarkLimitClear measures what each mode adds to a sandbox's creation
// and teardown as the runtime does them: create makes the directory and
// limits it, destroy clears the limit and removes the directory. A few KiB
// are written in between, like the sandbox's state file. It reports the
// percentiles of each half; ns/op is their sum.
func BenchmarkLimitClear(b *testing.B) {
	for _, mode := range []string{"btrfs", "image"} {
		b.Run(mode, func(b *testing.B) {
			var f *FS
			if mode == "btrfs" {
				f = setupBtrfsTest(b)
			} else {
				testenv.RequiresRoot(b, "mount loop devices")
				f = &FS{dir: b.TempDir(), images: true}
			}
			dir := filepath.Join(f.Dir(), "sb")
			var create, destroy []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := os.Mkdir(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				if err := f.Limit(dir, 9, 1<<30); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := os.WriteFile(filepath.Join(dir, "state.json"), make([]byte, 4096), 0o600); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := f.Clear(9); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				create, destroy = append(create, t1.Sub(t0)), append(destroy, time.Since(t2))
			}
			report(b, "create", create)
			report(b, "destroy", destroy)
		})
	}
}

// report adds the 50th, 90th and 99th percentile of ds to the results.
func report(b *testing.B, what string, ds []time.Duration) {
	slices.Sort(ds)
	for _, p := range []int{50, 90, 99} {
		b.ReportMetric(float64(ds[(len(ds)-1)*p/100].Microseconds()), fmt.Sprintf("%s-p%d-us", what, p))
	}
}

// TestQuotaProbeKeptInDataDir pins ~20 ms that every `airlock run` paid
// on a host without btrfs-progs: the probe of whether the kernel mounts
// ext4 with project quotas formatted and mounted an image in every new
// process. Its answer is kept beside the pool and reused for this kernel.
func TestQuotaProbeKeptInDataDir(t *testing.T) {
	requiresRoot(t)
	dir := filepath.Join(t.TempDir(), "sandboxes")
	before := probeRuns
	first, err := projectQuotaWorks(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := projectQuotaWorks(dir)
	if err != nil || again != first {
		t.Fatalf("second answer %v, %v; first was %v", again, err, first)
	}
	if n := probeRuns - before; n != 1 {
		t.Errorf("%d probes for two asks on one data dir, want 1", n)
	}
	// A result kept for another kernel is probed again.
	if err := os.WriteFile(dir+".probe", []byte(formatProbe(!first, "0.0.0-other")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := projectQuotaWorks(dir); err != nil || got != first {
		t.Errorf("after a kernel change: %v, %v; want a fresh probe saying %v", got, err, first)
	}
	if n := probeRuns - before; n != 2 {
		t.Errorf("%d probes, want 2 after the kernel changed", n)
	}
}
