package quota

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A tree moves between nodes as a tar stream (a snapshot handed to a node
// that has room for a sandbox made from it). The stream is the same bytes
// every time for an unchanged tree, so a transfer that broke resumes at
// an offset; the receiving side trusts nothing in it: every entry is
// made beneath its root through open parents, never through a symlink.

// nobody is the owner written for ids outside the tree's range.
const nobody = 65534

// WriteTar writes the tree at dir to w, each entry's name under prefix
// ("upper/"). Owners in [base, base+count) are written as their ids less
// base (the ids inside a sandbox), others as nobody. It writes
// directories, regular files, symlinks, hard links (to the first name of
// their inode), user.* and trusted.* xattrs and 0/0 character devices
// (overlay whiteouts); it leaves out other devices, FIFOs and sockets.
func WriteTar(dir, prefix string, w io.Writer, base, count int) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := walk(dir, func(dirfd int, name, p string, st *unix.Stat_t) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		h := &tar.Header{Name: prefix + rel, Mode: int64(st.Mode & 0o7777), Format: tar.FormatPAX,
			Uid: tarID(st.Uid, base, count), Gid: tarID(st.Gid, base, count),
			ModTime: time.Unix(st.Mtim.Unix()).UTC()}
		if dirfd == unix.AT_FDCWD {
			h.Name = strings.TrimSuffix(prefix, "/")
			if h.Name == "" {
				return nil // the root itself: the receiver makes it
			}
		}
		var body *os.File
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case unix.S_IFLNK:
			target, err := readlinkAt(dirfd, name)
			if err != nil {
				return fmt.Errorf("readlink %s: %w", p, err)
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
		case unix.S_IFCHR:
			if st.Rdev != 0 {
				return nil
			}
			h.Typeflag = tar.TypeChar
		case unix.S_IFREG:
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := links[key]; ok && st.Nlink > 1 {
				h.Typeflag, h.Linkname = tar.TypeLink, first
				break
			}
			links[key] = h.Name
			fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			body = os.NewFile(uintptr(fd), p)
			defer body.Close()
			h.Typeflag, h.Size = tar.TypeReg, st.Size
		default:
			return nil
		}
		if h.Typeflag != tar.TypeSymlink && h.Typeflag != tar.TypeLink {
			if err := tarXattrs(h, atPath(dirfd, name)); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if body != nil {
			if n, err := io.CopyN(tw, body, h.Size); err != nil {
				return fmt.Errorf("%s: %d of %d bytes: %w", p, n, h.Size, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func tarID(id uint32, base, count int) int {
	if int(id) >= base && int(id) < base+count {
		return int(id) - base
	}
	return nobody
}

func tarXattrs(h *tar.Header, p string) error {
	names, err := listXattrs(p)
	if err != nil {
		return fmt.Errorf("list xattrs: %w", err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") {
			continue
		}
		v, err := getXattr(p, name)
		if err != nil {
			return fmt.Errorf("get xattr %s: %w", name, err)
		}
		if h.PAXRecords == nil {
			h.PAXRecords = map[string]string{}
		}
		h.PAXRecords["SCHILY.xattr."+name] = string(v)
	}
	return nil
}

// ReadTar unpacks a stream WriteTar wrote into the empty directory dst,
// owners as written. An entry that would leave dst, pass through a
// symlink, or be of a kind WriteTar never writes, is refused.
func ReadTar(r io.Reader, dst string) error {
	return ReadTarChecked(r, dst, nil)
}

// ReadTarChecked is ReadTar with check, when not nil, refusing entries
// beyond those guards (what the tree being unpacked may not hold).
func ReadTarChecked(r io.Reader, dst string, check func(h *tar.Header) error) error {
	root, err := openRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if check != nil {
			if err := check(h); err != nil {
				return fmt.Errorf("unpack %q: %w", h.Name, err)
			}
		}
		if err := untarEntry(int(root.Fd()), h, tr); err != nil {
			return fmt.Errorf("unpack %q: %w", h.Name, err)
		}
	}
}

func untarEntry(root int, h *tar.Header, body io.Reader) error {
	name := path.Clean(h.Name)
	if !validRel(name) {
		return errors.New("not a path beneath the root")
	}
	dir, base := path.Split(name)
	parent, err := openBeneath(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	switch h.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(parent, base, 0o700); err != nil {
			return err
		}
	case tar.TypeReg:
		fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		_, err = io.CopyN(f, body, h.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		return finishEntry(parent, base, h, unix.Symlinkat(h.Linkname, parent, base))
	case tar.TypeLink:
		target := path.Clean(h.Linkname)
		if !validRel(target) {
			return errors.New("hard link to a path not beneath the root")
		}
		tdir, tbase := path.Split(target)
		tparent, err := openBeneath(root, tdir)
		if err != nil {
			return err
		}
		err = unix.Linkat(tparent, tbase, parent, base, 0)
		unix.Close(tparent)
		return err
	case tar.TypeChar:
		if h.Devmajor != 0 || h.Devminor != 0 {
			return errors.New("a device node other than a whiteout")
		}
		if err := unix.Mknodat(parent, base, unix.S_IFCHR, 0); err != nil {
			return err
		}
	default:
		return fmt.Errorf("entry type %q", h.Typeflag)
	}
	for k, v := range h.PAXRecords {
		if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && (strings.HasPrefix(x, "user.") || strings.HasPrefix(x, "trusted.")) {
			if err := unix.Lsetxattr(atPath(parent, base), x, []byte(v), 0); err != nil {
				return fmt.Errorf("set xattr %s: %w", x, err)
			}
		}
	}
	return finishEntry(parent, base, h, nil)
}

// finishEntry gives an entry its owner, mode and time, chown first (it
// clears setuid and setgid).
func finishEntry(parent int, base string, h *tar.Header, err error) error {
	if err != nil {
		return err
	}
	if err := unix.Fchownat(parent, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if h.Typeflag != tar.TypeSymlink {
		if err := unix.Fchmodat(parent, base, uint32(h.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(h.ModTime.UnixNano()), unix.NsecToTimespec(h.ModTime.UnixNano())}
	return unix.UtimesNanoAt(parent, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// validRel: a relative, clean path with no ".." component.
func validRel(p string) bool {
	return p != "." && p != "" && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
}

// openBeneath opens the directory dir beneath root (an O_PATH fd), one
// component at a time, refusing symlinks.
func openBeneath(root int, dir string) (int, error) {
	fd, err := unix.Openat(root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		if c == "." || c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("path component %q", c)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", c, err)
		}
		fd = next
	}
	return fd, nil
}

// NewDir makes the empty directory path on the FS: a subvolume in btrfs
// mode (so that snapshots of what is unpacked there share its data),
// else a plain directory.
func (f *FS) NewDir(p string) error {
	parent, err := openRoot(path.Dir(p))
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := f.holds(parent); err != nil {
		return err
	}
	if f.btrfs != nil {
		return createSubvolume(parent, path.Base(p))
	}
	return unix.Mkdirat(int(parent.Fd()), path.Base(p), 0o700)
}
