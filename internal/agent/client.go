package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"sort"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Client talks to one agent over its unix socket. It is safe for concurrent
// use: every operation dials its own connection.
type Client struct {
	path string
}

// Dial returns a client for the agent listening on socketPath. It does not
// connect; each operation does.
func Dial(socketPath string) *Client {
	return &Client{path: socketPath}
}

// clientConn is one operation's connection.
type clientConn struct {
	ctx  context.Context
	c    net.Conn
	br   *bufio.Reader
	fw   *frameWriter
	buf  []byte
	stop func() bool
	// srcErr is the caller's reader failing mid-upload.
	srcErr atomic.Pointer[error]
}

// open dials, sends req and arranges for ctx cancellation to close the
// connection, which is how the agent learns to abandon the operation.
func (c *Client) open(ctx context.Context, req Request) (*clientConn, error) {
	return c.openInput(ctx, req, false)
}

// openInput is open; with endInput the request's end of input goes with it.
func (c *Client) openInput(ctx context.Context, req Request, endInput bool) (*clientConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", c.path)
	if err != nil {
		return nil, fmt.Errorf("dial agent: %w: %w", runtime.ErrUnavailable, err)
	}
	if err := writeRequest(nc, req, endInput); err != nil {
		nc.Close()
		return nil, err
	}
	cc := &clientConn{
		ctx: ctx,
		c:   nc,
		br:  bufio.NewReader(nc),
		fw:  newFrameWriter(nc),
	}
	cc.stop = context.AfterFunc(ctx, func() { nc.Close() })
	return cc, nil
}

func (cc *clientConn) close() {
	cc.stop()
	cc.c.Close()
}

// next returns the next meaningful frame. An error frame becomes an *Error;
// a broken connection after cancellation becomes the context's error.
func (cc *clientConn) next() (byte, []byte, error) {
	for {
		kind, p, err := readFrame(cc.br, &cc.buf)
		if err != nil {
			if cerr := cc.ctx.Err(); cerr != nil {
				return 0, nil, cerr
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, fmt.Errorf("read from agent: %w", err)
		}
		switch kind {
		case FrameKeepalive:
			continue
		case FrameError:
			e := &Error{}
			if err := json.Unmarshal(p, e); err != nil {
				return 0, nil, fmt.Errorf("%w: bad error frame: %v", errProtocol, err)
			}
			return kind, nil, e
		}
		return kind, p, nil
	}
}

// result waits for the final result frame and decodes it into v.
func (cc *clientConn) result(v any) error {
	kind, p, err := cc.next()
	if err != nil {
		return err
	}
	if kind != FrameResult {
		return fmt.Errorf("%w: frame %q where a result was expected", errProtocol, kind)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fmt.Errorf("%w: bad result: %v", errProtocol, err)
	}
	return nil
}

// call runs an operation with no streamed data.
func (c *Client) call(ctx context.Context, req Request, v any) error {
	cc, err := c.open(ctx, req)
	if err != nil {
		return err
	}
	defer cc.close()
	return cc.result(v)
}

// Ping checks that the agent answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.call(ctx, Request{Op: OpPing}, nil); err != nil {
		return fmt.Errorf("agent ping: %w", err)
	}
	return nil
}

// Signal sends sig to pid, or to its process group when group is set.
func (c *Client) Signal(ctx context.Context, pid, sig int, group bool) error {
	req := Request{Op: OpSignal, Pid: pid, Signal: sig, Group: group}
	if err := c.call(ctx, req, nil); err != nil {
		return fmt.Errorf("agent signal %d to %d: %w", sig, pid, err)
	}
	return nil
}

// ReadFile streams the file at path into w and returns the bytes copied.
func (c *Client) ReadFile(ctx context.Context, path string, w io.Writer) (int64, error) {
	n, err := c.readFile(ctx, path, w)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeNotRegular {
		return n, &runtime.NotRegularError{Path: path, What: e.Message}
	}
	if err != nil {
		return n, fmt.Errorf("agent read %s: %w", path, err)
	}
	return n, nil
}

func (c *Client) readFile(ctx context.Context, path string, w io.Writer) (int64, error) {
	cc, err := c.open(ctx, Request{Op: OpRead, Path: path})
	if err != nil {
		return 0, err
	}
	defer cc.close()
	var n int64
	for {
		kind, p, err := cc.next()
		if err != nil {
			return n, err
		}
		switch kind {
		case FrameData:
			m, err := w.Write(p)
			n += int64(m)
			if err != nil {
				return n, err
			}
		case FrameResult:
			var res SizeResult
			if err := json.Unmarshal(p, &res); err != nil {
				return n, fmt.Errorf("%w: bad result: %v", errProtocol, err)
			}
			if res.Size != n {
				return n, fmt.Errorf("%w: agent sent %d bytes, reported %d", errProtocol, n, res.Size)
			}
			return n, nil
		default:
			return n, fmt.Errorf("%w: unexpected frame %q", errProtocol, kind)
		}
	}
}

// sendStream copies r to the agent as data frames and ends the stream. On a
// read error it closes the connection so the agent discards what it got,
// and records the error so it is reported instead of the broken connection.
func (cc *clientConn) sendStream(r io.Reader) {
	buf := make([]byte, MaxPayload)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if cc.fw.write(FrameData, buf[:n]) != nil {
				return // the connection's reader reports why
			}
		}
		if errors.Is(err, io.EOF) {
			_ = cc.fw.write(FrameEnd, nil)
			return
		}
		if err != nil {
			cc.srcErr.Store(&err)
			cc.c.Close()
			return
		}
	}
}

// WriteFile atomically replaces the file at path with the content of r and
// mode's permission bits (0644 when zero). It returns the bytes written.
// Cancelling ctx abandons the upload and leaves the old file in place; as
// with os/exec, a reader blocked in Read keeps its goroutine until it returns.
func (c *Client) WriteFile(ctx context.Context, path string, r io.Reader, mode fs.FileMode) (int64, error) {
	cc, err := c.open(ctx, Request{Op: OpWrite, Path: path, Mode: unixMode(mode)})
	if err != nil {
		return 0, fmt.Errorf("agent write %s: %w", path, err)
	}
	// Send and receive at once: the agent may refuse early (missing parent,
	// permission, full disk) and the upload must then stop. The sender is not
	// waited for: it may sit in r.Read, which only r can end.
	go cc.sendStream(r)
	var res SizeResult
	err = cc.result(&res)
	cc.close()
	if src := cc.srcErr.Load(); src != nil && err != nil && !isAgentError(err) {
		err = *src
	}
	if err != nil {
		return 0, fmt.Errorf("agent write %s: %w", path, err)
	}
	return res.Size, nil
}

func isAgentError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Stat describes the file at path without following a final symlink.
func (c *Client) Stat(ctx context.Context, path string) (runtime.FileInfo, error) {
	var fi runtime.FileInfo
	if err := c.call(ctx, Request{Op: OpStat, Path: path}, &fi); err != nil {
		return runtime.FileInfo{}, fmt.Errorf("agent stat %s: %w", path, err)
	}
	return fi, nil
}

// ListDir lists the directory at path, sorted by name.
func (c *Client) ListDir(ctx context.Context, path string) ([]runtime.FileInfo, error) {
	list, err := c.listDir(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("agent list %s: %w", path, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

func (c *Client) listDir(ctx context.Context, path string) ([]runtime.FileInfo, error) {
	cc, err := c.open(ctx, Request{Op: OpList, Path: path})
	if err != nil {
		return nil, err
	}
	defer cc.close()
	list := []runtime.FileInfo{}
	for {
		kind, p, err := cc.next()
		if err != nil {
			return nil, err
		}
		switch kind {
		case FrameEntry:
			var fi runtime.FileInfo
			if err := json.Unmarshal(p, &fi); err != nil {
				return nil, fmt.Errorf("%w: bad entry: %v", errProtocol, err)
			}
			list = append(list, fi)
		case FrameResult:
			return list, nil
		default:
			return nil, fmt.Errorf("%w: unexpected frame %q", errProtocol, kind)
		}
	}
}

// MkdirAll creates path and any missing parents with mode (0755 when zero,
// subject to the agent's umask).
func (c *Client) MkdirAll(ctx context.Context, path string, mode fs.FileMode) error {
	if err := c.call(ctx, Request{Op: OpMkdir, Path: path, Mode: unixMode(mode)}, nil); err != nil {
		return fmt.Errorf("agent mkdir %s: %w", path, err)
	}
	return nil
}

// Remove deletes path; a directory needs recursive unless it is empty. A
// symlink is removed itself, never what it points to.
func (c *Client) Remove(ctx context.Context, path string, recursive bool) error {
	if err := c.call(ctx, Request{Op: OpRemove, Path: path, Recursive: recursive}, nil); err != nil {
		return fmt.Errorf("agent remove %s: %w", path, err)
	}
	return nil
}

// Rename moves from to to, replacing to if it is a file.
func (c *Client) Rename(ctx context.Context, from, to string) error {
	if err := c.call(ctx, Request{Op: OpRename, Path: from, To: to}, nil); err != nil {
		return fmt.Errorf("agent rename %s to %s: %w", from, to, err)
	}
	return nil
}

// unixMode converts Go permission and special bits to the unix bits the
// protocol carries.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}
