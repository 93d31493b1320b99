package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Adopt makes path, a snapshot made by Snapshot and moved directly into
// Dir, the limited directory of project id with a limit of bytes, as Limit
// makes an empty directory; Usage and Clear then treat it as any other.
//
// In btrfs mode a snapshot subvolume is recorded for id and its qgroup
// limited where it is. In project mode the tree joins project id, and its
// directories pass the project on to new files. Otherwise (image mode, or a
// btrfs snapshot that was copied, not a subvolume) the tree is moved aside,
// path limited as Limit limits an empty directory (in image mode, a fresh
// filesystem mounted on it) and the tree copied back in; if that fails,
// path holds the tree again, unlimited.
//
// What a btrfs snapshot's limit counts depends on the quota mode. Simple
// quotas charge an extent to the subvolume that wrote it, for as long as
// it exists: the bytes the snapshot shares stay charged to its source,
// even once that is cleared, and the limit and Usage count only what is
// written after the snapshot. Full qgroups limit all the snapshot refers
// to, shared bytes included, while Usage reports the bytes it alone holds.
func (f *FS) Adopt(path string, id uint32, bytes int64) error {
	path = filepath.Clean(path)
	if id == 0 {
		return fmt.Errorf("adopt %s: project 0 is every other file's project", path)
	}
	if bytes <= 0 {
		return fmt.Errorf("adopt %s: size %d must be positive", path, bytes)
	}
	if filepath.Dir(path) != f.dir {
		return fmt.Errorf("adopt %s: not directly in %s", path, f.dir)
	}
	d, err := openRoot(path)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", path, err)
	}
	isSubvolume := f.btrfs != nil && f.isSubvolume(d)
	d.Close()
	switch {
	case isSubvolume:
		err = f.adoptSubvolume(path, id, bytes)
	case f.btrfs != nil || f.images:
		err = f.adoptByCopy(path, id, bytes)
	default:
		err = f.adoptProject(path, id, bytes)
	}
	if err != nil {
		return fmt.Errorf("adopt %s: %w", path, err)
	}
	return nil
}

// adoptSubvolume limits the snapshot subvolume path and records it for id.
// Limit would refuse it: it is a subvolume already, no project's.
func (f *FS) adoptSubvolume(path string, id uint32, bytes int64) error {
	d, err := openRoot(path)
	if err != nil {
		return err
	}
	n, err := subvolumeID(d)
	d.Close()
	if err != nil {
		return fmt.Errorf("subvolume id: %w", err)
	}
	sv := subvolume{name: filepath.Base(path), id: n}
	// Two projects on one subvolume would each delete it on Clear.
	if owner, ok, err := f.owner(sv); err != nil {
		return err
	} else if ok && owner != id {
		return fmt.Errorf("the subvolume of project %d: %w", owner, fs.ErrExist)
	}
	root, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := limitQgroup(root, sv.id, uint64(bytes)); err != nil {
		return fmt.Errorf("limit qgroup 0/%d: %w", sv.id, err)
	}
	return f.record(id, sv)
}

// adoptProject puts the tree at path in project id, then limits it; if
// that fails, the tree goes back to project 0, where Snapshot made it.
func (f *FS) adoptProject(path string, id uint32, bytes int64) error {
	// A tree in another project is that project's limited directory.
	d, err := openRoot(path)
	if err != nil {
		return err
	}
	var x fsxattr
	err = ioctl(d, fsIOCGetXattr, &x)
	d.Close()
	if err != nil {
		return fmt.Errorf("get attributes: %w", err)
	}
	if x.Projid != 0 && x.Projid != id {
		return fmt.Errorf("the directory of project %d: %w", x.Projid, fs.ErrExist)
	}
	err = setTreeProject(path, id)
	if err == nil {
		err = f.Limit(path, id, bytes)
	}
	if err != nil {
		return errors.Join(err, setTreeProject(path, 0))
	}
	return nil
}

// setTreeProject puts the directories and files of the tree at path in
// project id, the directories passing it on to new files unless id is 0.
// The project of a symlink or device node cannot be set through an open
// file, the only way before Linux 6.17: they stay in theirs, holding an
// inode and at most a block each.
func setTreeProject(path string, id uint32) error {
	return walk(path, func(dirfd int, name, p string, st *unix.Stat_t) error {
		typ := st.Mode & unix.S_IFMT
		if typ != unix.S_IFDIR && typ != unix.S_IFREG {
			return nil
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		file := os.NewFile(uintptr(fd), p)
		defer file.Close()
		if err := setProjectID(file, id, typ == unix.S_IFDIR && id != 0); err != nil {
			return fmt.Errorf("set project of %s: %w", p, err)
		}
		return nil
	})
}

// adoptByCopy moves the tree at path aside, limits the empty directory put
// in its place and copies the tree into it. On error it gives path its tree
// back.
func (f *FS) adoptByCopy(path string, id uint32, bytes int64) error {
	aside, err := os.MkdirTemp(f.dir, "."+filepath.Base(path)+".adopt-")
	if err != nil {
		return err
	}
	// rename(2) replaces the empty temporary directory (os.Rename refuses).
	if err := unix.Rename(path, aside); err != nil {
		return errors.Join(fmt.Errorf("move aside: %w", err), os.Remove(aside))
	}
	if err := f.limitCopy(aside, path, id, bytes); err != nil {
		if rerr := unix.Rename(aside, path); rerr != nil {
			return fmt.Errorf("%w (and the tree is left at %s: %v)", err, aside, rerr)
		}
		return err
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("limited, but the tree set aside stays at %s: %w", aside, err)
	}
	return nil
}

// limitCopy makes path a directory limited to bytes for project id holding
// a copy of the tree at src. On error it leaves nothing at path.
func (f *FS) limitCopy(src, path string, id uint32, bytes int64) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	err := f.Limit(path, id, bytes)
	if err == nil {
		if err = copyTree(src, path); err != nil {
			err = errors.Join(err, f.Clear(id))
		}
	}
	if err != nil {
		// Clear deleted a btrfs subvolume; an image's mount point is
		// left, empty.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
