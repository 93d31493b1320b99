package quota

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// copier copies a sandbox directory into another directory, entry by
// entry, as Snapshot describes; like walk it reaches every entry relative
// to its open parent and stays on the filesystem of the tree's root.
type copier struct {
	dev   uint64            // filesystem of the source tree
	dst   *os.File          // root of the copy
	links map[uint64]string // source inode with several links -> its copy, relative to dst
}

// copyTree copies the entries of the directory src into the existing
// directory dst, then gives dst src's owner, mode, xattrs and times.
func copyTree(src, dst string) error {
	s, err := openRoot(src)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := openRoot(dst)
	if err != nil {
		return err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(s.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	c := &copier{dev: st.Dev, dst: d, links: map[uint64]string{}}
	if err := c.dir(s, d, src, "."); err != nil {
		return err
	}
	return setAttrs(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, &st)
}

// dir copies the entries of the source directory s into d; where names s
// for messages, rel names d within the copy.
func (c *copier) dir(s, d *os.File, where, rel string) error {
	names, err := s.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", where, err)
	}
	for _, name := range names {
		if err := c.entry(s, d, name, filepath.Join(where, name), rel); err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) entry(s, d *os.File, name, p, rel string) error {
	sfd, dfd := int(s.Fd()), int(d.Fd())
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	typ := st.Mode & unix.S_IFMT
	linked := typ != unix.S_IFDIR && st.Nlink > 1
	if first, ok := c.links[st.Ino]; ok && linked {
		if err := unix.Linkat(int(c.dst.Fd()), first, dfd, name, 0); err != nil {
			return fmt.Errorf("link copy of %s: %w", p, err)
		}
		return nil
	}
	var err error
	switch typ {
	case unix.S_IFDIR:
		// It sets its attributes after its entries.
		return c.subdir(s, d, name, p, path.Join(rel, name), &st)
	case unix.S_IFREG:
		err = copyFile(sfd, dfd, name, &st)
	case unix.S_IFLNK:
		var target string
		if target, err = readlinkAt(sfd, name); err == nil {
			err = unix.Symlinkat(target, dfd, name)
		}
	case unix.S_IFCHR:
		// Only overlay whiteouts: a device node that opens a device
		// would hand the sandbox the device.
		if st.Rdev != 0 {
			return nil
		}
		err = unix.Mknodat(dfd, name, unix.S_IFCHR|0o600, 0)
	default: // sockets, FIFOs and block devices hold nothing to keep
		return nil
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	if linked {
		c.links[st.Ino] = path.Join(rel, name)
	}
	if err := setAttrs(sfd, name, dfd, name, &st); err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	return nil
}

// subdir copies the directory name and its entries, then its attributes:
// creating the entries would move its mtime. A directory another
// filesystem is mounted on is copied as an empty one. An existing directory
// is merged into: the root of a fresh ext4 image has its lost+found.
func (c *copier) subdir(s, d *os.File, name, p, rel string, st *unix.Stat_t) error {
	sfd, dfd := int(s.Fd()), int(d.Fd())
	if err := unix.Mkdirat(dfd, name, 0o700); errors.Is(err, unix.EEXIST) {
		var dst unix.Stat_t
		if err := unix.Fstatat(dfd, name, &dst, unix.AT_SYMLINK_NOFOLLOW); err != nil || dst.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("copy %s: %w", p, unix.EEXIST)
		}
	} else if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	if st.Dev == c.dev {
		sub, err := openDirAt(sfd, name)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		defer sub.Close()
		dsub, err := openDirAt(dfd, name)
		if err != nil {
			return fmt.Errorf("open copy of %s: %w", p, err)
		}
		defer dsub.Close()
		if err := c.dir(sub, dsub, p, rel); err != nil {
			return err
		}
	}
	if err := setAttrs(sfd, name, dfd, name, st); err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	return nil
}

// copyFile copies the regular file name from the directory sfd into dfd,
// sharing its extents (FICLONE) where the filesystem can, copying its data
// and keeping its holes otherwise.
func copyFile(sfd, dfd int, name string, st *unix.Stat_t) error {
	ifd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(ifd), name)
	defer in.Close()
	var ist unix.Stat_t
	if err := unix.Fstat(ifd, &ist); err != nil {
		return err
	}
	if ist.Ino != st.Ino || ist.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("replaced while being copied")
	}
	ofd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(ofd), name)
	err = unix.IoctlFileClone(ofd, ifd)
	if cannotShare(err) {
		err = copySparse(out, in, ist.Size)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// cannotShare says whether err is how the kernel refuses to share or copy
// extents between two files (other filesystems, no support), as opposed
// to failing at it.
func cannotShare(err error) bool {
	for _, e := range []error{unix.EXDEV, unix.EOPNOTSUPP, unix.ENOTTY, unix.EINVAL, unix.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// copySparse copies the data extents of src into dst and leaves its holes
// holes, so the copy costs only what src holds. Within one filesystem the
// kernel copies the extents (copy_file_range); across filesystems, which it
// refuses, they are read and written.
func copySparse(dst, src *os.File, size int64) error {
	if err := dst.Truncate(size); err != nil {
		return err
	}
	inKernel := true
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(src.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) { // no data after off
			return nil
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(src.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := copyRange(dst, src, data, min(hole, size), &inKernel); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// copyRange copies bytes [off, end) of src to the same place in dst; once
// copy_file_range refuses it clears inKernel and reads and writes instead.
func copyRange(dst, src *os.File, off, end int64, inKernel *bool) error {
	for *inKernel && off < end {
		in, out := off, off
		n, err := unix.CopyFileRange(int(src.Fd()), &in, int(dst.Fd()), &out, int(end-off), 0)
		if cannotShare(err) {
			*inKernel = false
			break
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("copy at %d: file shrank: %w", off, io.ErrUnexpectedEOF)
		}
		off += int64(n)
	}
	if off >= end {
		return nil
	}
	buf := make([]byte, min(end-off, 1<<20))
	n, err := io.CopyBuffer(io.NewOffsetWriter(dst, off), io.NewSectionReader(src, off, end-off), buf)
	if err == nil && n < end-off {
		err = fmt.Errorf("copy at %d: file shrank: %w", off+n, io.ErrUnexpectedEOF)
	}
	return err
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}

// setAttrs gives the copy dname in dfd the xattrs, owner, mode and times
// of sname in sfd, in that order: chown clears setuid and setgid, and each
// change but the last moves only the ctime.
func setAttrs(sfd int, sname string, dfd int, dname string, st *unix.Stat_t) error {
	if err := copyXattrs(atPath(sfd, sname), atPath(dfd, dname)); err != nil {
		return err
	}
	if err := unix.Fchownat(dfd, dname, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := unix.Fchmodat(dfd, dname, st.Mode&0o7777, 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(dfd, dname, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}

// atPath names name in the open directory dirfd by a path whose last
// component the l*xattr calls do not follow: through /proc/self/fd, the
// directory is the one held open, not one a path would find now.
func atPath(dirfd int, name string) string {
	if dirfd == unix.AT_FDCWD {
		return name
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, name)
}

// copyXattrs copies the user.* xattrs (overlayfs with userxattr keeps its
// opaque and redirect markers there) and the trusted.* ones (overlayfs
// without it). security.* ones (SELinux labels, file capabilities) are not
// copied: they name ids and labels of the source's sandbox.
func copyXattrs(src, dst string) error {
	names, err := listXattrs(src)
	if err != nil {
		return fmt.Errorf("list xattrs: %w", err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") {
			continue
		}
		v, err := getXattr(src, name)
		if err != nil {
			return fmt.Errorf("get xattr %s: %w", name, err)
		}
		if err := unix.Lsetxattr(dst, name, v, 0); err != nil {
			return fmt.Errorf("set xattr %s: %w", name, err)
		}
	}
	return nil
}

func listXattrs(path string) ([]string, error) {
	for {
		n, err := unix.Llistxattr(path, nil)
		if errors.Is(err, unix.EOPNOTSUPP) || n == 0 && err == nil {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		n, err = unix.Llistxattr(path, b)
		if errors.Is(err, unix.ERANGE) { // grew meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSuffix(string(b[:n]), "\x00"), "\x00"), nil
	}
}

func getXattr(path, name string) ([]byte, error) {
	for {
		n, err := unix.Lgetxattr(path, name, nil)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		n, err = unix.Lgetxattr(path, name, b)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return b[:n], nil
	}
}
