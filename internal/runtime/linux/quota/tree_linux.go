package quota

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// The trees walked here are sandbox directories, whose files a sandbox
// wrote. Every entry is reached relative to its open parent, never by a
// path, and opened with O_NOFOLLOW: a sandbox that swaps a symlink in for
// one of its directories cannot lead a walk out of its tree into the host's
// files (CWE-59). A walk stays on the filesystem of its root, so it never
// touches what is mounted in the tree, nor a btrfs subvolume nested in it.

// visitFunc is called with each entry of a walk: name in the directory
// dirfd (for the root, dirfd is AT_FDCWD and name its path), path for
// messages, and the entry's lstat.
type visitFunc func(dirfd int, name, path string, st *unix.Stat_t) error

// walk calls fn for the directory root and every entry below it, each
// directory before its entries. Entries on another filesystem than root
// (mount points) are left out, with all they hold.
func walk(root string, fn visitFunc) error {
	d, err := openRoot(root)
	if err != nil {
		return err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", root, err)
	}
	if err := fn(unix.AT_FDCWD, root, root, &st); err != nil {
		return err
	}
	return walkDir(d, root, st.Dev, fn)
}

func walkDir(d *os.File, path string, dev uint64, fn visitFunc) error {
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	// In name order: a tar of an unchanged tree is the same bytes every
	// time (WriteTar), so a transfer can resume at an offset.
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(path, name)
		var st unix.Stat_t
		if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if st.Dev != dev {
			continue
		}
		if err := fn(int(d.Fd()), name, p, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := openDirAt(int(d.Fd()), name)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		err = walkDir(sub, p, dev, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// openRoot opens the directory at path, which the caller chose.
func openRoot(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens the directory name in dirfd, refusing a symlink.
func openDirAt(dirfd int, name string) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ShiftOwners changes, in the tree at dir, every uid and gid in
// [from, from+count) to to+(id-from), leaving other ids alone: a snapshot
// of a sandbox that ran in the host id range from becomes the writable
// layer of one that runs in the range to. It does not follow symlinks (it
// changes the link's own owner) nor enter other mounts. Chown clears the
// setuid and setgid bits of a file; ShiftOwners sets them again. It drops
// file capabilities (security.capability) as chown does.
func ShiftOwners(dir string, from, to, count int) error {
	const ids = 1 << 32
	if from < 0 || to < 0 || count < 0 || from+count > ids || to+count > ids {
		return fmt.Errorf("shift owners in %s: bad range %d-%d to %d", dir, from, from+count, to)
	}
	shift := func(id uint32) (uint32, bool) {
		if int(id) < from || int(id) >= from+count {
			return id, false
		}
		return uint32(to + int(id) - from), true
	}
	// A file with several links is met once per link; when the ranges
	// overlap, shifting it again would move it twice.
	done := map[uint64]bool{}
	err := walk(dir, func(dirfd int, name, path string, st *unix.Stat_t) error {
		typ := st.Mode & unix.S_IFMT
		if typ != unix.S_IFDIR && st.Nlink > 1 {
			if done[st.Ino] {
				return nil
			}
			done[st.Ino] = true
		}
		uid, u := shift(st.Uid)
		gid, g := shift(st.Gid)
		if !u && !g {
			return nil
		}
		if err := unix.Fchownat(dirfd, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
		if typ != unix.S_IFLNK && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			if err := unix.Fchmodat(dirfd, name, st.Mode&0o7777, 0); err != nil {
				return fmt.Errorf("chmod %s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("shift owners in %s: %w", dir, err)
	}
	return nil
}

// DiskUsage is the bytes the tree at dir occupies on its filesystem: the
// blocks allocated to each file (a file's holes cost nothing), a file with
// several links counted once, mounts in the tree left out. Extents a btrfs
// file shares with another (a snapshot, a reflink) count in full.
func DiskUsage(dir string) (int64, error) {
	var total int64
	seen := map[uint64]bool{}
	err := walk(dir, func(_ int, _, _ string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}
