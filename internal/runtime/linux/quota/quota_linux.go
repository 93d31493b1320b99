package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnavailable means this host cannot provide disk quotas (not root, no
// loop devices, no mkfs.ext4...); the message says which.
var ErrUnavailable = errors.New("disk quota unavailable")

// mountOptions: prjquota enforces project limits; discard lets deleted data
// punch holes in the sparse image so the host gets the space back;
// noinit_itable stops the kernel zeroing inode tables in the background,
// which would fill the sparse image for nothing (a fresh image reads as
// zeros already).
const mountOptions = "prjquota,discard,noinit_itable"

// FS is a mounted filesystem with project quotas.
type FS struct {
	dir    string
	source string // block device, for quotactl on kernels without quotactl_fd
}

// Dir is where the filesystem is mounted.
func (f *FS) Dir() string { return f.dir }

// Setup makes dir the mount point of a filesystem that enforces project
// quotas. A filesystem already mounted there is reused if it enforces them
// (a restarted daemon finds its own); otherwise the sparse image dir+".img"
// is mounted, created with sizeBytes of capacity if it does not exist.
func Setup(dir string, sizeBytes int64) (*FS, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	if m, ok, err := mountAt(dir); err != nil {
		return nil, fmt.Errorf("quota setup %s: %w", dir, err)
	} else if ok {
		if !m.enforcesProjectQuota() {
			return nil, fmt.Errorf("quota setup: %s is a %s mount without project quota: %w", dir, m.FSType, ErrUnavailable)
		}
		return &FS{dir: dir, source: m.Source}, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("quota setup: mounting needs root: %w", ErrUnavailable)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	img := dir + ".img"
	made := false
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if err := makeImage(img, sizeBytes); err != nil {
			return nil, err
		}
		made = true
	}
	src, err := mountImage(img, dir)
	if err != nil {
		if made {
			os.Remove(img)
		}
		return nil, err
	}
	return &FS{dir: dir, source: src}, nil
}

// makeImage formats a sparse ext4 image with the quota and project features.
// It formats a temporary file and renames it into place, so an image at the
// final path is always complete and never formatted twice.
func makeImage(img string, size int64) error {
	mkfs, err := findMkfs()
	if err != nil {
		return err
	}
	tmp := img + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create image: %w", err)
	}
	// Lazy init keeps mkfs from writing the inode tables and journal: the
	// image stays sparse. -m 0: no blocks reserved for root, the limits are
	// per project anyway.
	out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", "-O", "quota,project",
		"-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1", tmp).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mkfs.ext4 %s: %w: %s", img, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create image: %w", err)
	}
	return nil
}

// findMkfs looks in PATH and then in the sbin directories a daemon's PATH
// often lacks.
func findMkfs() (string, error) {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("mkfs.ext4 not found (install e2fsprogs): %w", ErrUnavailable)
}

// mountImage attaches img to a loop device and mounts it at dir, returning
// the device path.
func mountImage(img, dir string) (string, error) {
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
	if err := unix.Mount(dev.Name(), dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, mountOptions); err != nil {
		return "", fmt.Errorf("mount %s at %s: %w", img, dir, err)
	}
	return dev.Name(), nil
}

// Close unmounts the filesystem; its loop device detaches itself. The image
// stays, so a later Setup mounts the same data again. The daemon keeps the
// filesystem mounted across restarts and never calls it.
func (f *FS) Close() error {
	if err := unix.Unmount(f.dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", f.dir, err)
	}
	return nil
}

// Detect says whether dir has, or Setup could give it, enforced project
// quotas, and why, for `airlock doctor`.
func Detect(dir string) (ok bool, detail string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false, err.Error()
	}
	m, mounted, err := mountAt(dir)
	switch {
	case err != nil:
		return false, err.Error()
	case mounted && m.enforcesProjectQuota():
		return true, fmt.Sprintf("%s: %s with project quota on %s", dir, m.FSType, m.Source)
	case mounted:
		return false, fmt.Sprintf("%s: %s mounted without project quota", dir, m.FSType)
	case os.Geteuid() != 0:
		return false, "not root: cannot mount a quota filesystem"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return false, "no /dev/loop-control: loop devices unavailable"
	}
	if b, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(b), "\text4\n") {
		return false, "kernel has no ext4"
	}
	if _, err := findMkfs(); err != nil {
		return false, err.Error()
	}
	return true, fmt.Sprintf("%s: will mount sparse ext4 image %s.img with project quota", dir, dir)
}
