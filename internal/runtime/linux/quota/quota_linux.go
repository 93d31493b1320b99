package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnavailable means this host cannot provide disk quotas (not root, no
// loop devices, no mkfs.ext4...); the message says which.
var ErrUnavailable = errors.New("disk quota unavailable")

// Mount options: prjquota enforces project limits; discard lets deleted
// data punch holes in the sparse image so the host gets the space back;
// noinit_itable stops the kernel zeroing inode tables in the background,
// which would fill the sparse image for nothing (a fresh image reads as
// zeros already).
const (
	sharedMount = "prjquota,discard,noinit_itable"
	imageMount  = "discard,noinit_itable"
)

// mkfs.ext4 options. Lazy init keeps mkfs from writing the inode tables and
// journal, so images stay sparse; -m 0 reserves no blocks for root, limits
// are per sandbox anyway. A per-directory image holds one disposable
// sandbox layer: it needs no journal, and twice the default inode density
// because package trees are many small files.
var (
	sharedMkfs = []string{"-q", "-F", "-m", "0", "-O", "quota,project", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1"}
	imageMkfs  = []string{"-q", "-F", "-m", "0", "-O", "^has_journal", "-i", "8192", "-E", "nodiscard,lazy_itable_init=1"}
)

// FS is the place sandbox layers live, with one of three ways to bound them:
// a btrfs filesystem mounted at Dir with one subvolume and qgroup limit per
// limited directory; project quotas on one shared ext4 filesystem mounted
// at Dir; or, where neither is available (no mkfs.btrfs, and a kernel
// without CONFIG_QFMT_V2 / CONFIG_XFS_QUOTA), one small ext4 image per
// limited directory, mounted on it.
type FS struct {
	dir    string
	source string      // block device: for quotactl without quotactl_fd
	images bool        // image mode: one image per limited directory
	btrfs  *subvolumes // btrfs mode
}

// Mode names how limits are enforced: "btrfs", "project" or "image".
func (f *FS) Mode() string {
	switch {
	case f.btrfs != nil:
		return "btrfs"
	case f.images:
		return "image"
	}
	return "project"
}

// Dir is where the shared filesystem is mounted (btrfs and project mode) or
// where the per-directory images are kept (image mode).
func (f *FS) Dir() string { return f.dir }

// Setup makes dir the mount point of a filesystem that enforces quotas:
// btrfs where mkfs.btrfs and the kernel allow, else ext4 with project
// quotas. A filesystem already mounted there is reused if it enforces them
// (a restarted daemon finds its own); otherwise the sparse image dir+".img"
// is mounted, created with sizeBytes of capacity if it does not exist. When
// dir is another mount, or the kernel can enforce neither, it returns an FS
// in image mode instead.
func Setup(dir string, sizeBytes int64) (*FS, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	if m, ok, err := mountAt(dir); err != nil {
		return nil, fmt.Errorf("quota setup %s: %w", dir, err)
	} else if ok {
		if m.FSType == "btrfs" && os.Geteuid() == 0 {
			f, err := openBtrfs(dir, m.Source, ownsImage(dir, m.Source))
			if err == nil || !errors.Is(err, ErrUnavailable) {
				return f, err
			}
		}
		if enforcesProjectQuota(m) {
			return &FS{dir: dir, source: m.Source}, nil
		}
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("quota setup: mounting needs root: %w", ErrUnavailable)
		}
		return &FS{dir: dir, images: true}, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("quota setup: mounting needs root: %w", ErrUnavailable)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	if ok, err := choosesBtrfs(dir); err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	} else if ok {
		return setupBtrfs(dir, sizeBytes)
	}
	ok, err := projectQuotaWorks(dir)
	if err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	if !ok {
		return &FS{dir: dir, images: true}, nil
	}
	img := dir + ".img"
	made := false
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if err := makeImage(img, sizeBytes, "ext4", sharedMkfs...); err != nil {
			return nil, err
		}
		made = true
	}
	src, err := mountImage(img, dir, "ext4", sharedMount)
	if err != nil {
		if made {
			os.Remove(img)
		}
		return nil, err
	}
	return &FS{dir: dir, source: src}, nil
}

// makeImage formats a sparse image of size bytes with mkfs.<fstype> and
// the options opts. It formats a temporary file and renames it into place,
// so an image at the final path is always complete and never formatted twice.
func makeImage(img string, size int64, fstype string, opts ...string) error {
	mkfs, err := findMkfs(fstype)
	if err != nil {
		return err
	}
	// A unique temporary name: two sandboxes may need the same template.
	f, err := os.CreateTemp(filepath.Dir(img), filepath.Base(img)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create image: %w", err)
	}
	tmp := f.Name()
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create image: %w", err)
	}
	out, err := exec.Command(mkfs, append(opts, tmp)...).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mkfs.%s %s: %w: %s", fstype, img, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create image: %w", err)
	}
	return nil
}

// findMkfs looks in PATH and then in the sbin directories a daemon's PATH
// often lacks.
func findMkfs(fstype string) (string, error) {
	name := "mkfs." + fstype
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/" + name, "/sbin/" + name} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	pkg := map[string]string{"ext4": "e2fsprogs", "btrfs": "btrfs-progs"}[fstype]
	return "", fmt.Errorf("%s not found (install %s): %w", name, pkg, ErrUnavailable)
}

// mountImage attaches img to a loop device and mounts its fstype
// filesystem at dir with the options opts, returning the device path.
func mountImage(img, dir, fstype, opts string) (string, error) {
	f, err := os.OpenFile(img, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	dev, err := attachLoop(f)
	if err != nil {
		return "", fmt.Errorf("quota setup: %w", err)
	}
	// Closing the device after mounting leaves the mount as its only user,
	// so autoclear detaches it on unmount (or now, if the mount failed).
	defer dev.Close()
	if err := unix.Mount(dev.Name(), dir, fstype, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mount %s at %s: %w", img, dir, err)
	}
	return dev.Name(), nil
}

// Close unmounts the shared filesystem (btrfs or project mode); its loop
// device detaches itself. The
// image stays, so a later Setup mounts the same data again. The daemon keeps
// the filesystem mounted across restarts and never calls it. In image mode
// it does nothing: each limited directory is released by Clear.
func (f *FS) Close() error {
	if f.images {
		return nil
	}
	if err := unix.Unmount(f.dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", f.dir, err)
	}
	return nil
}

// WaitDetached waits up to d, after Close, for the loop device under the
// filesystem to let go of its image. The kernel detaches it once nothing
// references the filesystem, which a mount namespace cloned while it was
// mounted (any sandbox's, while it sets itself up) may still do for a
// moment.
func (f *FS) WaitDetached(d time.Duration) error {
	if f.images || !strings.HasPrefix(f.source, "/dev/loop") {
		return nil
	}
	backing := filepath.Join("/sys/block", filepath.Base(f.source), "loop", "backing_file")
	img := f.dir + ".img"
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(backing)
		if err != nil || strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") != img {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loop device %s still holds %s %s after it was unmounted", f.source, img, d)
		}
	}
}

// Detect says whether dir has, or Setup could give it, a disk limit, and
// how, for `airlock doctor`. As root it formats and mounts a small probe
// image to learn whether the kernel enforces project quotas.
func Detect(dir string) (ok bool, detail string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false, err.Error()
	}
	m, mounted, err := mountAt(dir)
	switch {
	case err != nil:
		return false, err.Error()
	case mounted && enforcesProjectQuota(m):
		return true, fmt.Sprintf("%s: %s with project quota on %s", dir, m.FSType, m.Source)
	case os.Geteuid() != 0:
		return false, "not root: cannot mount quota filesystems"
	case mounted && m.FSType == "btrfs":
		if f, err := openBtrfs(dir, m.Source, false); err == nil {
			return true, fmt.Sprintf("%s: btrfs on %s, one subvolume with a %s limit for each sandbox layer", dir, m.Source, f.btrfs.quota)
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return false, "no /dev/loop-control: loop devices unavailable"
	}
	if b, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(b), "\text4\n") {
		return false, "kernel has no ext4"
	}
	if !mounted {
		if ok, err := choosesBtrfs(dir); err != nil {
			return false, err.Error()
		} else if ok {
			return true, fmt.Sprintf("%s: sparse btrfs image %s.img, one subvolume with a qgroup limit for each sandbox layer", dir, dir)
		}
	}
	if _, err := findMkfs("ext4"); err != nil {
		return false, err.Error()
	}
	works, err := projectQuotaWorks(dir)
	switch {
	case err != nil:
		return false, err.Error()
	case mounted || !works:
		return true, fmt.Sprintf("%s: one sparse ext4 image per sandbox layer (kernel lacks ext4 project quota)", dir)
	}
	return true, fmt.Sprintf("%s: sparse ext4 image %s.img with project quota", dir, dir)
}
