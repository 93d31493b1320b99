package images

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// flatten applies img's layers in order beneath dst, then makes the mount
// points, and returns the file content bytes written.
func flatten(ctx context.Context, img *image, dst string, maxBytes int64, progress func(Progress)) (int64, error) {
	root, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", dst, err)
	}
	defer unix.Close(root)
	x := &extractor{
		root:    root,
		written: &budget{max: maxBytes, what: "content written"},
		skipped: map[string]bool{},
	}
	stream := &budget{max: maxBytes, what: "uncompressed size"}
	for i, l := range img.layers {
		x.beginLayer()
		err := readLayer(ctx, l, i+1, len(img.layers), stream, progress, x.apply)
		if err == nil {
			err = x.endLayer()
		}
		if err != nil {
			return 0, fmt.Errorf("layer %s (%d of %d): %w", l.id(), i+1, len(img.layers), err)
		}
	}
	if err := makeMountPoints(root); err != nil {
		return 0, err
	}
	return x.written.used, nil
}

// mountPoint is a directory the sandbox mounts onto.
type mountPoint struct {
	path     string
	mode     uint32
	uid, gid int
}

// mountPoints must exist in every root, as real directories. A missing
// one is made with this owner and mode; one the image has is left as the
// image has it.
var mountPoints = []mountPoint{
	{"proc", 0o755, 0, 0},
	{"dev", 0o755, 0, 0},
	{"sys", 0o755, 0, 0},
	{"tmp", 0o1777, 0, 0},
	{"etc", 0o755, 0, 0},
	{"home", 0o755, 0, 0},
	{"home/user", 0o755, 1000, 1000},
	{"root", 0o700, 0, 0},
	{"usr", 0o755, 0, 0},
	{"var", 0o755, 0, 0},
	{"var/tmp", 0o1777, 0, 0},
}

// makeMountPoints makes the mount points. Where the image has a symlink
// or a file in the way (say tmp -> /var/tmp), it is replaced by a
// directory: a mount onto a symlink lands wherever the link points,
// outside the root if it likes (the class of runc's CVE-2019-19921 and
// CVE-2021-30465), and the runtime must not have to check each one.
func makeMountPoints(root int) error {
	for _, m := range mountPoints {
		if err := makeMountPoint(root, m); err != nil {
			return fmt.Errorf("mount point /%s: %w", m.path, err)
		}
	}
	return nil
}

// MakeMountPoints makes the mount points of the root filesystem at dir,
// as Import does: a tree that came from elsewhere (a template another
// node sent) is held to what Import made.
func MakeMountPoints(dir string) error {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(root)
	return makeMountPoints(root)
}

func makeMountPoint(root int, m mountPoint) error {
	dir, base := splitPath(m.path)
	// The parents come earlier in mountPoints, so are real directories.
	pfd, err := openDir(root, dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd, err := openChild(pfd, base)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if err := removeAllAt(pfd, base); err != nil {
			return err
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("open: %w", err)
	}
	fd, err = mkdirChild(pfd, base, 0o700)
	if err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	if err := unix.Fchmod(fd, m.mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	return nil
}
