package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
)

// ResolvePath turns an API path into the absolute, clean path inside the
// sandbox: relative paths are under /home/user. Cleaning here only makes
// paths canonical; confinement is the runtime's job, which resolves them
// inside the sandbox's root, so "../../etc/passwd" is the sandbox's
// /etc/passwd and never the host's.
//
// A path the kernel could not take (a NUL, a name over MaxName bytes, over
// MaxPath bytes in all once resolved) is ErrInvalid naming the bad part,
// on every file operation alike.
func ResolvePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: path is required", ErrInvalid)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: NUL byte in path", ErrInvalid)
	}
	if !path.IsAbs(p) {
		p = DefaultWorkdir + "/" + p
	}
	p = path.Clean(p)
	if err := CheckPathLength(p); err != nil {
		return "", err
	}
	return p, nil
}

// fileOp resolves the sandbox and the path for one file operation.
func (s *Service) fileOp(ctx context.Context, c Caller, id, p string) (runtime.Sandbox, string, error) {
	abs, err := ResolvePath(p)
	if err != nil {
		return nil, "", err
	}
	_, sb, err := s.live(ctx, c, id)
	if err != nil {
		return nil, "", err
	}
	return sb, abs, nil
}

// ReadFile copies a file of the sandbox to w.
func (s *Service) ReadFile(ctx context.Context, c Caller, id, p string, w io.Writer) (int64, error) {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return 0, err
	}
	h := sha256.New()
	n, err := sb.ReadFile(ctx, abs, io.MultiWriter(w, h))
	if err == nil {
		s.recordFile(c, id, audit.FileRead, abs, n, h)
	}
	return n, s.fileError(ctx, id, abs, err)
}

// recordFile records a whole file read or written: its path, size and
// hash, never its contents.
func (s *Service) recordFile(c Caller, id, typ, abs string, n int64, h hash.Hash) {
	s.auditor(c, id, c.TenantID).record(typ, map[string]any{
		"path": s.scrubber(id).String(abs), "size": n, "sha256": hex.EncodeToString(h.Sum(nil))})
}

// WriteFile creates or replaces a file of the sandbox with r's bytes.
func (s *Service) WriteFile(ctx context.Context, c Caller, id, p string, r io.Reader, mode fs.FileMode) (int64, error) {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return 0, err
	}
	// Like E2B's and Daytona's uploads, a write creates missing parent
	// directories (as the sandbox user, so only where it may).
	if dir := path.Dir(abs); dir != "/" {
		if err := sb.MkdirAll(ctx, dir, 0o755); err != nil {
			return 0, s.fileError(ctx, id, dir, err)
		}
	}
	h := sha256.New()
	n, err := sb.WriteFile(ctx, abs, io.TeeReader(r, h), mode)
	if err == nil {
		s.recordFile(c, id, audit.FileWritten, abs, n, h)
	}
	return n, s.fileError(ctx, id, abs, err)
}

// ListDir lists a directory of the sandbox.
func (s *Service) ListDir(ctx context.Context, c Caller, id, p string) ([]runtime.FileInfo, error) {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return nil, err
	}
	l, err := sb.ListDir(ctx, abs)
	return l, s.fileError(ctx, id, abs, err)
}

// Stat describes one file of the sandbox.
func (s *Service) Stat(ctx context.Context, c Caller, id, p string) (runtime.FileInfo, error) {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return runtime.FileInfo{}, err
	}
	fi, err := sb.Stat(ctx, abs)
	return fi, s.fileError(ctx, id, abs, err)
}

// Mkdir creates a directory and its missing parents.
func (s *Service) Mkdir(ctx context.Context, c Caller, id, p string, mode fs.FileMode) error {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return err
	}
	return s.fileError(ctx, id, abs, sb.MkdirAll(ctx, abs, mode))
}

// Move renames a file or directory within the sandbox.
func (s *Service) Move(ctx context.Context, c Caller, id, from, to string) error {
	dst, err := ResolvePath(to)
	if err != nil {
		return err
	}
	sb, src, err := s.fileOp(ctx, c, id, from)
	if err != nil {
		return err
	}
	return s.fileError(ctx, id, src+" -> "+dst, sb.Rename(ctx, src, dst))
}

// Remove deletes a file, or a directory (with its contents if recursive).
func (s *Service) Remove(ctx context.Context, c Caller, id, p string, recursive bool) error {
	sb, abs, err := s.fileOp(ctx, c, id, p)
	if err != nil {
		return err
	}
	return s.fileError(ctx, id, abs, sb.Remove(ctx, abs, recursive))
}

// fileError maps a runtime file error to the API's kinds. A permission
// error is the caller's to fix (ErrInvalid): the API's 403 means a
// credential may not use a route, which is not what happened here.
func (s *Service) fileError(ctx context.Context, id, p string, err error) error {
	if err == nil {
		return nil
	}
	if lost, ok := s.lostError(ctx, id, err); ok {
		return lost
	}
	var nre *runtime.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, runtime.ErrNotFound):
		return fmt.Errorf("%w: no such file: %s", ErrNotFound, p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: permission denied: %s", ErrInvalid, p)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: %s: %v", ErrConflict, p, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: no space left in the sandbox: %s", ErrLimitExceeded, p)
	case errors.As(err, &nre):
		return fmt.Errorf("%w: %s is %s, not a regular file: the file API reads regular files only (read it with exec, e.g. cat)", ErrInvalid, p, nre.What)
	case errors.Is(err, runtime.ErrChanged):
		return fmt.Errorf("%w: %s: %v; read it again once it is no longer written", ErrConflict, p, innermost(err))
	case errors.Is(err, runtime.ErrInvalid), errors.Is(err, fs.ErrInvalid):
		return fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, p, err)
}

// innermost is the error at the end of err's chain: the runtime's own
// words, without the layers of context around them.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
