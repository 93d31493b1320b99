package images

import (
	"fmt"
	"path"
	"strings"
)

// cleanPath turns a tar entry's name (or a hardlink's target) into a path
// relative to the root filesystem: slash-separated, no "." or ".."
// components, no leading slash. "" is the root itself. A name that climbs
// out of the root ("../x", "a/../../x") is refused, not clamped, so a
// hostile layer is reported rather than quietly rewritten. A leading "/" is
// read as the root, as docker and containerd do.
//
// cleanPath is lexical only: it cannot see symlinks, so the extractor still
// resolves each result without following any.
func cleanPath(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: %q has a NUL byte", ErrUnsafePath, name)
	}
	p := path.Clean(strings.TrimLeft(name, "/"))
	switch {
	case p == ".":
		return "", nil
	case p == ".." || strings.HasPrefix(p, "../"):
		return "", fmt.Errorf("%w: %q climbs out of the root", ErrUnsafePath, name)
	}
	return p, nil
}

// splitPath splits a cleanPath result into its directory ("" for the
// root) and its last component.
func splitPath(p string) (dir, base string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// joinPath joins a cleanPath result ("" for the root) and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
