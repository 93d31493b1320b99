package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Whiteout names (OCI image spec, "Representing Changes").
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
	// whiteoutMeta starts aufs bookkeeping names (.wh..wh.plnk and kin):
	// never content, never created.
	whiteoutMeta = ".wh..wh."
)

// extractor applies the entries of an image's layers, in order, beneath
// the directory open as root.
type extractor struct {
	root    int
	written *budget // file content bytes written, against MaxBytes
	// touched holds every path this layer wrote and their ancestors: what
	// an opaque marker must keep.
	touched map[string]bool
	// skipped holds device nodes and FIFOs left out, so that hardlinks to
	// them are left out too rather than failing the import.
	skipped  map[string]bool
	dirTimes []dirTime
}

type dirTime struct {
	path  string
	mtime time.Time
}

// beginLayer starts a new layer.
func (x *extractor) beginLayer() {
	x.touched = map[string]bool{}
	x.dirTimes = x.dirTimes[:0]
}

// endLayer sets the layer's directories' mtimes, now that no entry of
// the layer will add to them.
func (x *extractor) endLayer() error {
	for _, d := range x.dirTimes {
		dir, base := splitPath(d.path)
		pfd, err := openDir(x.root, dir, false)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, ErrUnsafePath) {
			continue // removed, or replaced by a symlink, later in the layer
		}
		if err != nil {
			return err
		}
		err = setTimes(pfd, base, d.mtime)
		unix.Close(pfd)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("set mtime of %s: %w", d.path, err)
		}
	}
	return nil
}

// apply applies one tar entry; it is an applyFunc.
func (x *extractor) apply(hdr *tar.Header, r io.Reader) error {
	p, err := cleanPath(hdr.Name)
	if err != nil {
		return err
	}
	if p == "" {
		return nil // the root is Import's: 0755, owned by the importer
	}
	dir, base := splitPath(p)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return x.whiteout(dir, base)
	}
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	pfd, err := openDir(x.root, dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)

	// What an entry names replaces what a lower entry left there, except
	// that a directory over a directory merges.
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || hdr.Typeflag != tar.TypeDir {
			if err := removeAllAt(pfd, base); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("stat: %w", err)
	}

	switch hdr.Typeflag {
	case tar.TypeDir:
		err = x.dir(pfd, base, p, hdr)
	case tar.TypeReg, tar.TypeGNUSparse:
		err = x.file(pfd, base, hdr, r)
	case tar.TypeSymlink:
		err = x.symlink(pfd, base, hdr)
	case tar.TypeLink:
		if target, _ := cleanPath(hdr.Linkname); x.skipped[target] {
			x.skipped[p] = true
			return nil
		}
		err = x.hardlink(pfd, base, hdr)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		// Device nodes would hand the sandbox the host's devices; the
		// runtime gives it the /dev it should have.
		x.skipped[p] = true
		return nil
	default:
		return fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
	if err != nil {
		return err
	}
	delete(x.skipped, p)
	x.touch(p)
	return nil
}

// touch records p and its ancestors as written by this layer.
func (x *extractor) touch(p string) {
	for p != "" && !x.touched[p] {
		x.touched[p] = true
		p, _ = splitPath(p)
	}
}

// whiteout applies a whiteout entry in dir: .wh.NAME removes NAME from
// lower layers, .wh..wh..opq empties dir of lower layers' content.
func (x *extractor) whiteout(dir, base string) error {
	name := strings.TrimPrefix(base, whiteoutPrefix)
	if base != whiteoutOpaque && (strings.HasPrefix(base, whiteoutMeta) || name == "") {
		return nil
	}
	if name == "." || name == ".." {
		// ".wh..." would otherwise empty the parent: at the top, the
		// directory holding dst.
		return fmt.Errorf("%w: whiteout %q names no entry", ErrUnsafePath, base)
	}
	fd, err := openDir(x.root, dir, false)
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing below to hide
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if base == whiteoutOpaque {
		// Keep what this layer already wrote: the marker may come after
		// the directory's new content in the tar.
		return emptyDir(fd, dir, func(p string) bool { return x.touched[p] })
	}
	return removeAllAt(fd, name)
}

// dir makes or updates a directory.
func (x *extractor) dir(pfd int, base, p string, hdr *tar.Header) error {
	fd, err := openChild(pfd, base)
	if errors.Is(err, unix.ENOENT) {
		fd, err = mkdirChild(pfd, base, 0o700)
	}
	if err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	defer unix.Close(fd)
	if err := ownAndMode(fd, hdr); err != nil {
		return err
	}
	x.dirTimes = append(x.dirTimes, dirTime{p, hdr.ModTime})
	return nil
}

// file writes a regular file.
func (x *extractor) file(pfd int, base string, hdr *tar.Header, r io.Reader) error {
	// O_EXCL|O_NOFOLLOW: whatever was here was removed above; if anything
	// appeared since, fail rather than write through it.
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	if _, err := io.Copy(&budgetWriter{w: f, limit: x.written}, r); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := ownAndMode(fd, hdr); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return setTimes(pfd, base, hdr.ModTime)
}

// symlink makes a symlink. Its target is stored as given: it is never
// followed here, and in the sandbox it resolves inside the sandbox's root.
func (x *extractor) symlink(pfd int, base string, hdr *tar.Header) error {
	if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
		return fmt.Errorf("symlink: %w", err)
	}
	uid, gid, err := owner(hdr)
	if err != nil {
		return err
	}
	if err := unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	return setTimes(pfd, base, hdr.ModTime)
}

// hardlink links to an entry already extracted; it shares that entry's
// inode and so its owner, mode and mtime.
func (x *extractor) hardlink(pfd int, base string, hdr *tar.Header) error {
	target, err := cleanPath(hdr.Linkname)
	if err != nil {
		return fmt.Errorf("hardlink target: %w", err)
	}
	if target == "" {
		return fmt.Errorf("%w: hardlink to the root", ErrUnsafePath)
	}
	tdir, tbase := splitPath(target)
	tfd, err := openDir(x.root, tdir, false)
	if err != nil {
		return fmt.Errorf("hardlink target %q: %w", hdr.Linkname, err)
	}
	defer unix.Close(tfd)
	// Flags 0: a target that is a symlink is linked itself, not followed.
	if err := unix.Linkat(tfd, tbase, pfd, base, 0); err != nil {
		return fmt.Errorf("hardlink to %q: %w", hdr.Linkname, err)
	}
	return nil
}

// ownAndMode gives an open file or directory the header's owner and
// permissions, less setuid and setgid: an image must not carry a way to
// gain privilege inside the sandbox. The sticky bit stays (/tmp needs it).
func ownAndMode(fd int, hdr *tar.Header) error {
	uid, gid, err := owner(hdr)
	if err != nil {
		return err
	}
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	// After chown, which may clear the bits this sets.
	mode := uint32(hdr.Mode) & 0o7777 &^ (unix.S_ISUID | unix.S_ISGID)
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}

// owner checks the header's ids: -1 would mean "leave unchanged" to chown.
func owner(hdr *tar.Header) (int, int, error) {
	if hdr.Uid < 0 || hdr.Gid < 0 || hdr.Uid >= math.MaxUint32 || hdr.Gid >= math.MaxUint32 {
		return 0, 0, fmt.Errorf("owner %d:%d out of range", hdr.Uid, hdr.Gid)
	}
	return hdr.Uid, hdr.Gid, nil
}
