package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// maxSmallBlob bounds what is read whole into memory from an archive
// (manifest.json, index.json, manifests, configs): a hostile archive must
// not make the daemon allocate gigabytes before a single check.
const maxSmallBlob = 4 << 20

// maxLinkHops bounds how many links inside an archive a member name may
// go through, so a link cycle ends.
const maxLinkHops = 8

// tarArchive reads members of an image archive by name. Each open scans
// the archive from its start; the tar reader seeks past member contents,
// so a scan costs one read per header, not per byte.
type tarArchive struct {
	path string
}

// memberName is how archive members are compared: "./blobs/x" and
// "blobs/x" are one member.
func memberName(n string) string {
	return path.Clean(strings.TrimLeft(n, "/"))
}

// names lists the archive's members.
func (a tarArchive) names() (map[string]bool, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			// Not a tar (or a cut one): no image archive.
			return nil, fmt.Errorf("read %s: %w: %v", a.path, ErrNotImage, err)
		}
		out[memberName(hdr.Name)] = true
	}
}

// open returns the contents and size of the member called name, following
// symlinks and hardlinks inside the archive (docker save links repeated
// layers to their first copy).
func (a tarArchive) open(name string) (io.ReadCloser, int64, error) {
	want := memberName(name)
	for range maxLinkHops {
		f, err := os.Open(a.path)
		if err != nil {
			return nil, 0, err
		}
		hdr, tr, err := seekMember(f, want)
		if err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("%s in %s: %w", name, a.path, err)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			return struct {
				io.Reader
				io.Closer
			}{tr, f}, hdr.Size, nil
		case tar.TypeSymlink:
			want = memberName(path.Join(path.Dir(want), hdr.Linkname))
		case tar.TypeLink:
			want = memberName(hdr.Linkname)
		default:
			f.Close()
			return nil, 0, fmt.Errorf("%s in %s: %w: not a regular file", name, a.path, ErrNotImage)
		}
		f.Close()
	}
	return nil, 0, fmt.Errorf("%s in %s: %w: more than %d links", name, a.path, ErrNotImage, maxLinkHops)
}

// seekMember advances a fresh reader of the archive to the member want.
func seekMember(f *os.File, want string) (*tar.Header, *tar.Reader, error) {
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%w: no such member", ErrNotImage)
		}
		if err != nil {
			return nil, nil, err
		}
		if memberName(hdr.Name) == want {
			return hdr, tr, nil
		}
	}
}

// readSmall reads a whole member of at most maxSmallBlob bytes.
func (a tarArchive) readSmall(name string) ([]byte, error) {
	rc, size, err := a.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > maxSmallBlob {
		return nil, fmt.Errorf("%s in %s: %w: %d bytes is over the %d-byte limit for metadata", name, a.path, ErrNotImage, size, maxSmallBlob)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, a.path, err)
	}
	return b, nil
}
