package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// list streams one entry frame per directory entry, reading the directory
// in batches so a huge directory never sits in memory.
func (s *server) list(c *opConn, p string) error {
	fd, err := s.open(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), p)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			// Stat relative to the directory fd: the names come from the
			// sandbox and must not be re-resolved from a path.
			fi, serr := statAt(fd, name, path.Join(p, name), 0)
			if errors.Is(serr, unix.ENOENT) {
				continue // removed since it was listed
			}
			if serr != nil {
				return serr
			}
			if err := c.fw.json(FrameEntry, fi); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			return c.fw.json(FrameResult, struct{}{})
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
	}
}

// mkdirAll creates p and its missing parents, like mkdir -p. Each prefix is
// resolved from Root again, so symlinks along the way stay inside Root.
func (s *server) mkdirAll(p string, mode uint32) error {
	if mode == 0 {
		mode = 0o755
	}
	cur := "/"
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if name == "" {
			continue
		}
		parent := cur
		cur = path.Join(cur, name)
		fd, err := s.open(cur, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("mkdir %s: %w", p, err)
		}
		pfd, err := s.open(parent, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("mkdir %s: %w", p, err)
		}
		err = unix.Mkdirat(pfd, name, mode&0o7777)
		unix.Close(pfd)
		// EEXIST: created concurrently, or a dangling symlink (the retry
		// below then reports what is really there).
		if err != nil && err != unix.EEXIST {
			return fmt.Errorf("mkdir %s: %w", cur, err)
		}
		fd, err = s.open(cur, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("mkdir %s: %w", p, err)
		}
		unix.Close(fd)
	}
	return nil
}

// remove deletes p; a symlink at p is removed, never followed.
func (s *server) remove(p string, recursive bool) error {
	dirfd, base, err := s.openParent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := removeAt(dirfd, base, recursive); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

func removeAt(dirfd int, name string, recursive bool) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	// unlink on a directory fails with EISDIR (EPERM on some filesystems).
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return err
	}
	if recursive {
		if err := removeChildren(dirfd, name); err != nil {
			return err
		}
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// removeChildren empties the directory name. O_NOFOLLOW guards the swap of
// the directory for a symlink between the stat and this open.
func removeChildren(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if rerr := removeAt(fd, n, true); rerr != nil && rerr != unix.ENOENT {
				return rerr
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
		// Entries were removed under the reader; start over from the top.
		if _, err := d.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
}

// rename moves from to to, neither final component followed.
func (s *server) rename(from, to string) error {
	fromfd, fromBase, err := s.openParent(from)
	if err != nil {
		return err
	}
	defer unix.Close(fromfd)
	tofd, toBase, err := s.openParent(to)
	if err != nil {
		return err
	}
	defer unix.Close(tofd)
	if err := unix.Renameat(fromfd, fromBase, tofd, toBase); err != nil {
		return fmt.Errorf("rename %s to %s: %w", from, to, err)
	}
	return nil
}
