package images

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The file system calls here all work relative to directory descriptors
// opened one component at a time with O_NOFOLLOW, so no path is ever
// resolved through a symlink: an image cannot redirect a write outside the
// root with a link an earlier entry or layer made (the class of
// CVE-2021-32760, and docker cp's CVE-2018-15664). Plain path strings are never passed
// to the kernel below the root.

// openDir opens rel (a cleanPath result) beneath root. With create it
// makes missing directories on the way, 0755 and owned by the importer.
// A symlink, or anything else that is not a directory, on the way is
// refused with ErrUnsafePath.
func openDir(root int, rel string, create bool) (int, error) {
	fd, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open root: %w", err)
	}
	if rel == "" {
		return fd, nil
	}
	walked := ""
	for comp := range strings.SplitSeq(rel, "/") {
		walked = joinPath(walked, comp)
		next, err := openChild(fd, comp)
		if errors.Is(err, unix.ENOENT) && create {
			next, err = mkdirChild(fd, comp, 0o755)
		}
		if err != nil {
			err = explainOpen(fd, comp, walked, err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// mkdirChild makes the directory name in dir with mode perm (not narrowed
// by the umask) and opens it.
func mkdirChild(dir int, name string, perm uint32) (int, error) {
	if err := unix.Mkdirat(dir, name, 0o700); err != nil {
		return -1, err
	}
	fd, err := openChild(dir, name)
	if err != nil {
		return -1, err
	}
	if err := unix.Fchmod(fd, perm); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// openChild opens the directory name in dir without following a symlink.
func openChild(dir int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// explainOpen turns the errors of a refused component into words.
func explainOpen(dir int, comp, walked string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("open %s: %w", walked, err)
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dir, comp, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%w: %q is a symlink, and paths are never resolved through one", ErrUnsafePath, walked)
	}
	return fmt.Errorf("%w: %q is not a directory", ErrUnsafePath, walked)
}

// removeAllAt removes name in dir and, if it is a directory, everything
// beneath it, never following a symlink.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	fd, err := openChild(dir, name)
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	err = emptyDir(fd, "", nil)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// emptyDir removes the entries of the directory open as fd, whose path
// is rel, except those keep says to keep; it descends into a kept
// directory and applies keep there too. keep nil keeps nothing.
func emptyDir(fd int, rel string, keep func(string) bool) error {
	names, err := readNames(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		p := joinPath(rel, n)
		if keep == nil || !keep(p) {
			if err := removeAllAt(fd, n); err != nil {
				return err
			}
			continue
		}
		child, err := openChild(fd, n)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue // a kept file or symlink: nothing beneath it
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		err = emptyDir(child, p, keep)
		unix.Close(child)
		if err != nil {
			return err
		}
	}
	return nil
}

// readNames lists a directory open as fd, leaving fd open.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

// setTimes sets name's atime and mtime to mtime, not following a symlink.
func setTimes(dir int, name string, mtime time.Time) error {
	ts, err := unix.TimeToTimespec(mtime)
	if err != nil {
		ts = unix.NsecToTimespec(0) // out of range: the epoch, not an error
	}
	if err := unix.UtimesNanoAt(dir, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}
