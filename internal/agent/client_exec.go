package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Process is a process started by Client.Start.
type Process struct {
	cc     *clientConn
	pid    int
	done   chan struct{}
	status runtime.ExitStatus
	err    error
}

// Pid is the process id inside the sandbox, usable with Client.Signal.
func (p *Process) Pid() int { return p.pid }

// Resize changes the size of the terminal a TTY process runs on (the
// process gets SIGWINCH). It fails once the process has ended.
func (p *Process) Resize(size runtime.TTYSize) error {
	if size.Cols == 0 || size.Rows == 0 {
		return fmt.Errorf("resize to %dx%d: %w", size.Cols, size.Rows, runtime.ErrInvalid)
	}
	return p.cc.fw.json(FrameResize, TTYSize{Cols: size.Cols, Rows: size.Rows})
}

// Wait blocks until the process has exited and its output has been written
// to the request's writers. It may be called more than once.
func (p *Process) Wait() (runtime.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Exec runs req to completion.
func (c *Client) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.ExitStatus, error) {
	p, err := c.Start(ctx, req)
	if err != nil {
		return runtime.ExitStatus{}, err
	}
	return p.Wait()
}

// Start begins req inside the sandbox. Its stdin is pumped from req.Stdin
// and its output to req.Stdout and req.Stderr until it exits. Cancelling ctx
// drops the connection, and the agent then kills the whole process tree.
//
// As with os/exec, a req.Stdin that blocks forever keeps its pump goroutine
// alive until it returns, although Wait does not wait for it.
func (c *Client) Start(ctx context.Context, req runtime.ExecRequest) (*Process, error) {
	wire, err := execWire(OpExec, req)
	if err != nil {
		return nil, fmt.Errorf("agent exec: %w", err)
	}
	cc, err := c.openInput(ctx, wire, req.Stdin == nil)
	if err != nil {
		return nil, fmt.Errorf("agent exec: %w", err)
	}
	pid, err := cc.started()
	if err != nil {
		cc.close()
		return nil, fmt.Errorf("agent exec: %w", err)
	}
	p := &Process{cc: cc, pid: pid, done: make(chan struct{})}
	if req.Stdin != nil {
		// The pump's error is not reported: a dead connection shows up as
		// the output loop's error, and a failing reader just ends stdin.
		go cc.sendStream(req.Stdin)
	}
	go p.collect(cc, req.Stdout, req.Stderr)
	return p, nil
}

func (x ExitFrame) status() runtime.ExitStatus {
	return runtime.ExitStatus{
		Code:     x.Code,
		Signal:   x.Signal,
		TimedOut: x.TimedOut,
		Duration: time.Duration(x.DurationMS * float64(time.Millisecond)),
	}
}

// execWire is the request that starts req's process with op.
func execWire(op string, req runtime.ExecRequest) (Request, error) {
	wire := Request{Op: op, Argv: req.Argv, Shell: req.Shell, Env: req.Env, Cwd: req.Cwd}
	if req.TTY != nil {
		if req.TTY.Cols == 0 || req.TTY.Rows == 0 {
			return Request{}, fmt.Errorf("terminal size %dx%d: %w", req.TTY.Cols, req.TTY.Rows, runtime.ErrInvalid)
		}
		wire.TTY = &TTYSize{Cols: req.TTY.Cols, Rows: req.TTY.Rows}
	}
	if req.Timeout < 0 {
		return Request{}, fmt.Errorf("negative timeout: %w", runtime.ErrInvalid)
	}
	if req.Timeout > 0 {
		// Round up so a sub-millisecond timeout does not become "none".
		wire.TimeoutMS = int64((req.Timeout + time.Millisecond - 1) / time.Millisecond)
	}
	return wire, nil
}

func (cc *clientConn) started() (int, error) {
	kind, payload, err := cc.next()
	if err != nil {
		return 0, err
	}
	var s StartedFrame
	if kind != FrameStarted || json.Unmarshal(payload, &s) != nil || s.Pid <= 0 {
		return 0, fmt.Errorf("%w: bad started frame", errProtocol)
	}
	return s.Pid, nil
}

// collect writes output frames until the exit frame. A failing writer does
// not stop the process (exec.Cmd would not either); its error is returned
// from Wait alongside the status.
func (p *Process) collect(cc *clientConn, stdout, stderr io.Writer) {
	defer close(p.done)
	defer cc.close()
	// One goroutine writes both streams, so a caller may pass the same
	// writer for stdout and stderr.
	out, errw := &sink{w: stdout}, &sink{w: stderr}
	var werr error
	for {
		kind, payload, err := cc.next()
		if err != nil {
			p.err = fmt.Errorf("agent exec %d: %w", p.pid, err)
			return
		}
		switch kind {
		case FrameStdout, FrameStderr:
			w := out
			if kind == FrameStderr {
				w = errw
			}
			if err := w.write(payload); err != nil && werr == nil {
				werr = err
			}
		case FrameExit:
			var x ExitFrame
			if err := json.Unmarshal(payload, &x); err != nil {
				p.err = fmt.Errorf("agent exec %d: %w: bad exit frame: %v", p.pid, errProtocol, err)
				return
			}
			p.status = x.status()
			if werr != nil {
				p.err = fmt.Errorf("agent exec %d: write output: %w", p.pid, werr)
			}
			return
		default:
			p.err = fmt.Errorf("agent exec %d: %w: unexpected frame %q", p.pid, errProtocol, kind)
			return
		}
	}
}

// sink discards output after its first error and when w is nil.
type sink struct {
	w   io.Writer
	err error
}

func (l *sink) write(p []byte) error {
	if l.w == nil || l.err != nil {
		return nil
	}
	_, l.err = l.w.Write(p)
	return l.err
}
