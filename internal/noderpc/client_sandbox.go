package noderpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/airlockhq/airlock/internal/runtime"
)

// sandbox is a sandbox on a node. It offers every optional interface: a
// node whose runtime lacks one answers ErrUnsupported, as a local sandbox
// whose agent is too old does.
type sandbox struct {
	rt *Runtime
	id string
}

var (
	_ runtime.Sandbox        = (*sandbox)(nil)
	_ runtime.JobRunner      = (*sandbox)(nil)
	_ runtime.Listener       = (*sandbox)(nil)
	_ runtime.Dialer         = (*sandbox)(nil)
	_ runtime.AgentVersioner = (*sandbox)(nil)
)

func (s *sandbox) ID() string { return s.id }

// path is the route of the sandbox's op, with query q if not nil.
func (s *sandbox) path(op string, q url.Values) string {
	p := "/sandboxes/" + url.PathEscape(s.id) + "/" + op
	if q != nil {
		p += "?" + q.Encode()
	}
	return p
}

func (s *sandbox) Signal(ctx context.Context, pid int, sig int) error {
	return s.rt.call(ctx, http.MethodPost, s.path("signal", nil), pidSignal{pid, sig}, nil)
}

func (s *sandbox) Stat(ctx context.Context, path string) (runtime.FileInfo, error) {
	var fi runtime.FileInfo
	err := s.rt.call(ctx, http.MethodPost, s.path("files/stat", nil), pathArgs{Path: path}, &fi)
	return fi, err
}

func (s *sandbox) ListDir(ctx context.Context, path string) ([]runtime.FileInfo, error) {
	var list []runtime.FileInfo
	err := s.rt.call(ctx, http.MethodPost, s.path("files/list", nil), pathArgs{Path: path}, &list)
	return list, err
}

func (s *sandbox) MkdirAll(ctx context.Context, path string, mode fs.FileMode) error {
	return s.rt.call(ctx, http.MethodPost, s.path("files/mkdir", nil), pathArgs{Path: path, Mode: mode}, nil)
}

func (s *sandbox) Remove(ctx context.Context, path string, recursive bool) error {
	return s.rt.call(ctx, http.MethodPost, s.path("files/remove", nil), pathArgs{Path: path, Recursive: recursive}, nil)
}

func (s *sandbox) Rename(ctx context.Context, from, to string) error {
	return s.rt.call(ctx, http.MethodPost, s.path("files/rename", nil), renameArgs{from, to}, nil)
}

func (s *sandbox) Stats(ctx context.Context) (runtime.Stats, error) {
	var st runtime.Stats
	err := s.rt.call(ctx, http.MethodGet, s.path("stats", nil), nil, &st)
	return st, err
}

func (s *sandbox) Destroy(ctx context.Context) error {
	return s.rt.call(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(s.id), nil, nil)
}

func (s *sandbox) AgentVersion(ctx context.Context) (int, error) {
	var v int
	err := s.rt.call(ctx, http.MethodGet, s.path("agent-version", nil), nil, &v)
	return v, err
}

func (s *sandbox) ReadFile(ctx context.Context, path string, w io.Writer) (int64, error) {
	st, err := s.rt.open(ctx, http.MethodGet, s.path("files", url.Values{"path": {path}}), nil)
	if err != nil {
		return 0, err
	}
	defer st.close()
	var n int64
	for {
		kind, p, err := st.next()
		if err != nil {
			return n, err
		}
		switch kind {
		case frameData:
			m, err := w.Write(p)
			n += int64(m)
			if err != nil {
				return n, fmt.Errorf("node read %s: %w", path, err)
			}
		case frameResult:
			var r sizeReply
			if err := json.Unmarshal(p, &r); err != nil || r.Size != n {
				return n, st.violation(fmt.Sprintf("read of %d bytes reported as %d (%v)", n, r.Size, err))
			}
			return n, nil
		default:
			return n, st.violation(fmt.Sprintf("frame %q in a file", kind))
		}
	}
}

func (s *sandbox) WriteFile(ctx context.Context, path string, r io.Reader, mode fs.FileMode) (int64, error) {
	src := newUpload(r)
	var res sizeReply
	q := url.Values{"path": {path}, "mode": {strconv.FormatUint(uint64(mode), 10)}}
	if err := s.rt.send(ctx, http.MethodPut, s.path("files", q), src.pr, &res); err != nil {
		return 0, src.failed(fmt.Sprintf("node write %s", path), err)
	}
	return res.Size, nil
}

// upload is a caller's reader sent as a request body through a pipe:
// the HTTP client closes the body when the call ends, and waits until
// its reading stops, which must not wait on the caller's Read. When the
// reader fails, the HTTP client abandons the request, and the reader's
// error, not the abandoned request's, is the call's. As with os/exec, a
// reader that blocks forever keeps the pump's goroutine until it returns.
type upload struct {
	pr  *io.PipeReader
	mu  sync.Mutex
	err error
}

func newUpload(r io.Reader) *upload {
	pr, pw := io.Pipe()
	u := &upload{pr: pr}
	go func() {
		buf := make([]byte, dataChunk)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := pw.Write(buf[:n]); werr != nil {
					return // the call has ended
				}
			}
			if err != nil {
				if err != io.EOF {
					u.mu.Lock()
					u.err = err
					u.mu.Unlock()
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return u
}

// failed is the error of a call that sent u and failed with err.
func (u *upload) failed(doing string, err error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, remote := err.(*remoteError); u.err == nil || remote {
		return err
	}
	return fmt.Errorf("%s: read input: %w", doing, u.err)
}
