package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
)

// resolveFlags keep every lookup inside Root: absolute symlinks and ".."
// are taken relative to Root (a planted link to /etc/shadow or ../../..
// stays inside), and /proc magic links, which jump anywhere, are refused.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

func (s *server) fileOp(c *opConn, req Request) error {
	p, err := s.clean(req.Path)
	if err != nil {
		return err
	}
	switch req.Op {
	case OpRead:
		return s.readFile(c, p)
	case OpWrite:
		return s.writeFile(c, p, req.Mode)
	case OpStat:
		fi, err := s.stat(p)
		if err != nil {
			return err
		}
		return c.fw.json(FrameResult, fi)
	case OpList:
		return s.list(c, p)
	case OpMkdir:
		err = s.mkdirAll(p, req.Mode)
	case OpRemove:
		err = s.remove(p, req.Recursive)
	case OpRename:
		var to string
		if to, err = s.clean(req.To); err == nil {
			err = s.rename(p, to)
		}
	}
	if err != nil {
		return err
	}
	return c.fw.json(FrameResult, struct{}{})
}

// clean makes p absolute inside the sandbox (relative to Workdir).
func (s *server) clean(p string) (string, error) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", errorf(CodeInvalid, "bad path %q", p)
	}
	if !path.IsAbs(p) {
		p = path.Join(s.cfg.Workdir, p)
	}
	return path.Clean(p), nil
}

// open resolves p inside Root.
func (s *server) open(p string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	for range 16 {
		fd, err := unix.Openat2(s.rootFD, p, how)
		// EAGAIN: a concurrent rename raced the ".." check; retry.
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", p, err)
		}
		return fd, nil
	}
	return -1, fmt.Errorf("open %s: %w", p, unix.EAGAIN)
}

// openParent opens p's directory for an *at call on its last component, so
// that component itself is never followed.
func (s *server) openParent(p string) (int, string, error) {
	if p == "/" {
		return -1, "", errorf(CodeInvalid, "operation not allowed on /")
	}
	dir, base := path.Split(p)
	fd, err := s.open(dir, unix.O_PATH|unix.O_DIRECTORY)
	return fd, base, err
}

// writeFile replaces p atomically: the data goes to a new file in the same
// directory, which is renamed over p only once complete and synced. The
// rename replaces a symlink at p instead of writing through it.
func (s *server) writeFile(c *opConn, p string, mode uint32) error {
	if mode == 0 {
		mode = 0o644
	}
	dirfd, base, err := s.openParent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if name := kernelFSOf(dirfd); name != "" {
		// Not a place for files: the kernel's own answer (ENOENT, EACCES)
		// would only mislead.
		return errorf(CodeInvalid, "write %s: %s is on the kernel's %s filesystem, where files cannot be created", p, path.Dir(p), name)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("write %s: %w", p, unix.EISDIR)
	}
	tmp := tempName()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	n, err := receive(c, f)
	if err == nil {
		err = finish(f, mode)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, base)
	}
	if err != nil {
		// Never leave a half-written temp file behind, whatever failed.
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return c.fw.json(FrameResult, SizeResult{Size: n})
}

// receive copies data frames into f until the end frame. A connection that
// breaks first is an error: the upload is incomplete.
func receive(c *opConn, f *os.File) (int64, error) {
	var buf []byte
	var n int64
	for {
		kind, data, err := readFrame(c.br, &buf)
		if err != nil {
			return n, fmt.Errorf("receive: %w", err)
		}
		switch kind {
		case FrameEnd:
			return n, nil
		case FrameData:
			m, err := f.Write(data)
			n += int64(m)
			if err != nil {
				return n, err
			}
		default:
			return n, errorf(CodeInvalid, "unexpected frame %q during upload", kind)
		}
	}
}

func finish(f *os.File, mode uint32) error {
	if err := unix.Fchmod(int(f.Fd()), mode&0o7777); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

func tempName() string {
	return ".airlock-" + randomHex(8) + ".tmp"
}

// stat describes p without following a final symlink.
func (s *server) stat(p string) (runtime.FileInfo, error) {
	if p == "/" {
		fd, err := s.open(p, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return runtime.FileInfo{}, err
		}
		defer unix.Close(fd)
		return statAt(fd, "", "/", unix.AT_EMPTY_PATH)
	}
	dirfd, base, err := s.openParent(p)
	if err != nil {
		return runtime.FileInfo{}, err
	}
	defer unix.Close(dirfd)
	return statAt(dirfd, base, p, 0)
}

func statAt(dirfd int, name, p string, flags int) (runtime.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, flags|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return runtime.FileInfo{}, fmt.Errorf("stat %s: %w", p, err)
	}
	fi := runtime.FileInfo{
		Name:    path.Base(p),
		Path:    p,
		Size:    st.Size,
		Mode:    fileMode(st.Mode),
		ModTime: time.Unix(st.Mtim.Unix()).UTC(),
		IsDir:   st.Mode&unix.S_IFMT == unix.S_IFDIR,
	}
	if fi.Mode&fs.ModeSymlink != 0 {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return runtime.FileInfo{}, fmt.Errorf("readlink %s: %w", p, err)
		}
		fi.Link = string(buf[:n])
	}
	return fi, nil
}

// fileMode converts unix mode bits to Go's.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
