package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Snapshot makes dst a copy of the directory src as it is now. dst must
// not exist, and its parent (say Dir/.snapshots) must be on this FS.
//
// In btrfs mode, when src is a subvolume (a limited directory), dst is a
// writable snapshot of it: its data is shared, not copied, so it takes
// milliseconds whatever src holds, and the kernel takes it at one instant.
// Its data written back first, that is: the kernel flushes what src has
// not yet written (a second per GiB or so) for the snapshot to hold it. It
// holds all src held, FIFOs and sockets included (leaving them out would
// cost a walk of the tree).
//
// Otherwise the tree is copied, sharing extents (FICLONE) where the
// filesystem can and keeping holes where it copies; the caller stops the
// writers in src (freezes the sandbox) for the copy to be of one instant.
// A copy keeps owners, modes (setuid included), times, symlinks, hardlinks,
// user.* and trusted.* xattrs and overlay whiteouts (0/0 character
// devices); it leaves out sockets, FIFOs, other device nodes, and what is
// mounted in src. It is made under a temporary name in dst's parent and
// renamed to dst when complete: on error nothing is left at dst.
func (f *FS) Snapshot(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("snapshot to %s: %w", dst, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot to %s: %w", dst, err)
	}
	parent, err := openRoot(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("snapshot to %s: %w", dst, err)
	}
	defer parent.Close()
	if err := f.holds(parent); err != nil {
		return fmt.Errorf("snapshot to %s: %w", dst, err)
	}
	s, err := openRoot(src)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", src, err)
	}
	defer s.Close()
	if f.btrfs != nil && f.isSubvolume(s) {
		if err := snapshotSubvolume(s, parent, filepath.Base(dst)); err != nil {
			return fmt.Errorf("snapshot %s to %s: %w", src, dst, err)
		}
		return nil
	}
	// A copy made inside its source would copy itself without end.
	if inside(filepath.Dir(dst), src) {
		return fmt.Errorf("snapshot %s to %s: the copy would lie in its source", src, dst)
	}
	if err := copySnapshot(src, dst); err != nil {
		return fmt.Errorf("snapshot %s to %s: %w", src, dst, err)
	}
	return nil
}

// inside says whether the path p is dir or lies below it, or cannot tell.
func inside(p, dir string) bool {
	p, perr := filepath.Abs(p)
	dir, derr := filepath.Abs(dir)
	rel, err := filepath.Rel(dir, p)
	if perr != nil || derr != nil || err != nil {
		return true
	}
	return rel != ".." && !strings.HasPrefix(rel, "../")
}

// copySnapshot copies src into a temporary directory beside dst and
// renames it to dst, which must not exist then either.
func copySnapshot(src, dst string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return err
	}
	err = copyTree(src, tmp)
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		if rerr := os.RemoveAll(tmp); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial copy: %v)", err, rerr)
		}
		return err
	}
	return nil
}

// RemoveSnapshot deletes the snapshot at path, which Snapshot made and
// Adopt did not take (Clear removes an adopted one). A btrfs snapshot is
// deleted as Clear deletes a subvolume: at once, its extents and then its
// qgroup freed by the kernel in the background. It is idempotent.
func (f *FS) RemoveSnapshot(path string) error {
	parent, err := openRoot(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove snapshot %s: %w", path, err)
	}
	defer parent.Close()
	// A guard against a caller's wrong path: only what lies on the FS.
	if err := f.holds(parent); err != nil {
		return fmt.Errorf("remove snapshot %s: %w", path, err)
	}
	name := filepath.Base(path)
	d, err := openDirAt(int(parent.Fd()), name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove snapshot %s: %w", path, err)
	}
	isSubvolume := f.btrfs != nil && f.isSubvolume(d)
	err = f.adopted(parent, d, isSubvolume)
	d.Close()
	if err != nil {
		return fmt.Errorf("remove snapshot %s: %w", path, err)
	}
	if isSubvolume {
		err = destroySubvolume(parent, name)
		if errors.Is(err, unix.ENOENT) {
			err = nil
		}
	} else {
		err = os.RemoveAll(path)
	}
	if err != nil {
		return fmt.Errorf("remove snapshot %s: %w", path, err)
	}
	return nil
}

// adopted refuses to remove the directory d in parent when a project
// holds it: a recorded subvolume, a filesystem mounted on it (image mode),
// a directory in a project. Clear releases those.
func (f *FS) adopted(parent, d *os.File, isSubvolume bool) error {
	switch {
	case isSubvolume:
		n, err := subvolumeID(d)
		if err != nil {
			return fmt.Errorf("subvolume id: %w", err)
		}
		if id, ok, err := f.owner(subvolume{name: filepath.Base(d.Name()), id: n}); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("the subvolume of project %d: %w", id, fs.ErrExist)
		}
	case f.btrfs == nil && !f.images:
		var x fsxattr
		if err := ioctl(d, fsIOCGetXattr, &x); err != nil {
			return fmt.Errorf("get attributes: %w", err)
		}
		if x.Projid != 0 {
			return fmt.Errorf("the directory of project %d: %w", x.Projid, fs.ErrExist)
		}
	}
	var pst, st unix.Stat_t
	if err := errors.Join(unix.Fstat(int(parent.Fd()), &pst), unix.Fstat(int(d.Fd()), &st)); err != nil {
		return err
	}
	if st.Dev != pst.Dev && !isSubvolume {
		return fmt.Errorf("a filesystem is mounted on it: %w", fs.ErrExist)
	}
	return nil
}

// holds fails unless the open directory d is on this FS: in btrfs mode on
// the same filesystem (any subvolume of it), else on the filesystem of Dir.
func (f *FS) holds(d *os.File) error {
	if f.btrfs != nil {
		if sysfs, err := btrfsSysfs(d); err != nil || sysfs != f.btrfs.sysfs {
			return fmt.Errorf("%s is not on the btrfs at %s", d.Name(), f.dir)
		}
		return nil
	}
	var st, root unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return err
	}
	if err := unix.Stat(f.dir, &root); err != nil {
		return err
	}
	if st.Dev != root.Dev {
		return fmt.Errorf("%s is not on the filesystem of %s", d.Name(), f.dir)
	}
	return nil
}

// isSubvolume says whether the open directory d is the root of a
// subvolume of this FS's btrfs: every subvolume's root has inode 256.
func (f *FS) isSubvolume(d *os.File) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil || st.Ino != btrfsFirstFreeObjectID {
		return false
	}
	return f.holds(d) == nil
}
