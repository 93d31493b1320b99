package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime/linux/mountinfo"
)

// imagePath is where the image of project id lives in image mode: derived
// from the id alone, so a restarted daemon finds it again.
func (f *FS) imagePath(id uint32) string {
	return filepath.Join(f.dir, fmt.Sprintf(".quota-%d.img", id))
}

// limitImage gives path a filesystem of its own, bytes in size: writes past
// it fail with ENOSPC. The new root keeps path's owner and mode, so a
// directory prepared for the sandbox's uid stays usable.
func (f *FS) limitImage(path string, id uint32, bytes int64) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("limit %s: not a directory", path)
	}
	img := f.imagePath(id)
	if _, err := os.Stat(img); err == nil {
		return fmt.Errorf("limit %s: project %d: %w", path, id, fs.ErrExist)
	}
	if err := f.copyTemplate(img, bytes); err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	if _, err := mountImage(img, path, "ext4", imageMount); err != nil {
		os.Remove(img)
		return fmt.Errorf("limit %s: %w", path, err)
	}
	if err := errors.Join(os.Chown(path, int(st.Uid), int(st.Gid)), os.Chmod(path, fs.FileMode(st.Mode&0o7777))); err != nil {
		unix.Unmount(path, 0)
		os.Remove(img)
		return fmt.Errorf("limit %s: %w", path, err)
	}
	return nil
}

// copyTemplate makes img a copy of a freshly formatted image of that size.
// Formatting once per size and copying the few MiB mkfs writes takes a
// fraction of the ~20 ms mkfs.ext4 costs on every sandbox.
func (f *FS) copyTemplate(img string, size int64) error {
	tpl := filepath.Join(f.dir, fmt.Sprintf(".quota-template-%d.img", size))
	if _, err := os.Stat(tpl); errors.Is(err, fs.ErrNotExist) {
		if err := makeImage(tpl, size, "ext4", imageMkfs...); err != nil {
			return err
		}
	}
	src, err := os.Open(tpl)
	if err != nil {
		return fmt.Errorf("open template: %w", err)
	}
	defer src.Close()
	dst, err := os.CreateTemp(f.dir, filepath.Base(img)+".tmp-*")
	if err != nil {
		return fmt.Errorf("copy template: %w", err)
	}
	err = copySparse(dst, src, size)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(dst.Name(), img)
	}
	if err != nil {
		os.Remove(dst.Name())
		return fmt.Errorf("copy template: %w", err)
	}
	return nil
}

// imageMount finds where the image of project id is mounted.
func (f *FS) imageMount(id uint32) (string, bool, error) {
	img := f.imagePath(id)
	mounts, err := mountinfo.Read()
	if err != nil {
		return "", false, err
	}
	for _, m := range mounts {
		if !strings.HasPrefix(m.Source, "/dev/loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(m.Source), "loop", "backing_file"))
		if err == nil && strings.TrimSpace(string(b)) == img {
			return m.Point, true, nil
		}
	}
	return "", false, nil
}

func (f *FS) usageImage(id uint32) (int64, error) {
	mnt, ok, err := f.imageMount(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("project %d: %w", id, fs.ErrNotExist)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// clearImage unmounts and deletes the image of project id, with everything
// the sandbox wrote in it.
func (f *FS) clearImage(id uint32) error {
	mnt, ok, err := f.imageMount(id)
	if err != nil {
		return err
	}
	if ok {
		if err := unix.Unmount(mnt, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
	}
	if err := os.Remove(f.imagePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
