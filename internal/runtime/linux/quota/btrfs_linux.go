package quota

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// mkfs.btrfs options. The image holds disposable sandbox layers: a second
// copy of metadata (the DUP default) would double its writes to guard
// against bad sectors in a sparse file on the host's own disk.
var btrfsMkfs = []string{"-q", "-f", "-m", "single", "-d", "single"}

// discard=async lets freed extents punch holes in the sparse image in the
// background, so the host gets the space of deleted sandboxes back without
// slowing the deletes.
const btrfsMountOpts = "discard=async"

// btrfsUsable says whether this host can format and mount btrfs.
func btrfsUsable() bool {
	if _, err := findMkfs("btrfs"); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/filesystems")
	return err == nil && strings.Contains(string(b), "\tbtrfs\n")
}

// isBtrfsImage says whether img holds a btrfs filesystem: its superblock,
// 64 KiB in, carries the magic "_BHRfS_M" at offset 64.
func isBtrfsImage(img string) (bool, error) {
	f, err := os.Open(img)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic := make([]byte, 8)
	if _, err := f.ReadAt(magic, 0x10040); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return string(magic) == "_BHRfS_M", nil
}

// choosesBtrfs says whether Setup gives the unmounted dir a btrfs image:
// when one exists already, or when none of any kind does and dir is empty.
// A dir with entries but no image was used in image mode, and mounting over
// it would hide the sandboxes and the mounts in it.
func choosesBtrfs(dir string) (bool, error) {
	img := dir + ".img"
	if ok, err := isBtrfsImage(img); err != nil || ok {
		return ok, err
	}
	if _, err := os.Stat(img); err == nil || !btrfsUsable() {
		return false, nil
	}
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err == io.EOF {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// setupBtrfs mounts the btrfs image of dir, formatting it first if there is
// none, and turns quotas on.
func setupBtrfs(dir string, size int64) (*FS, error) {
	img := dir + ".img"
	made := false
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if err := makeImage(img, size, "btrfs", btrfsMkfs...); err != nil {
			return nil, err
		}
		made = true
	}
	src, err := mountImage(img, dir, "btrfs", btrfsMountOpts)
	if err == nil {
		var f *FS
		if f, err = openBtrfs(dir, src, true); err == nil {
			return f, nil
		}
		if uerr := unix.Unmount(dir, 0); uerr != nil {
			err = fmt.Errorf("%w (and unmount: %v)", err, uerr)
		}
	}
	if made {
		os.Remove(img)
	}
	return nil, err
}

// openBtrfs returns the FS of the btrfs mounted at dir from source. It turns
// quotas on only when enable is set: on a filesystem this package did not
// format, enabling them would change (and with full qgroups, slow down) a
// filesystem that is not its own.
func openBtrfs(dir, source string, enable bool) (*FS, error) {
	root, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("quota setup: %w", err)
	}
	defer root.Close()
	sysfs, err := btrfsSysfs(root)
	if err != nil {
		return nil, fmt.Errorf("quota setup %s: btrfs fs info: %w", dir, err)
	}
	if enable {
		if _, err := enableQuota(root); err != nil {
			return nil, fmt.Errorf("quota setup %s: %w", dir, err)
		}
	}
	mode, err := os.ReadFile(filepath.Join(sysfs, "qgroups", "mode"))
	if errors.Is(err, fs.ErrNotExist) {
		// Kernels before 6.7 have only full qgroups and no mode file.
		if _, serr := os.Stat(filepath.Join(sysfs, "qgroups")); serr == nil {
			mode, err = []byte("qgroup"), nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("quota setup %s: quotas not enabled: %w", dir, ErrUnavailable)
	}
	return &FS{dir: dir, source: source, btrfs: &subvolumes{
		sysfs: sysfs, quota: string(bytes.TrimSpace(mode)), ids: map[uint32]subvolume{},
	}}, nil
}

// ownsImage says whether the loop device source is backed by dir's image.
func ownsImage(dir, source string) bool {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(source), "loop", "backing_file"))
	return err == nil && strings.TrimSpace(string(b)) == dir+".img"
}
