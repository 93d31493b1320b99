package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Version returns the protocol version the agent speaks (1 for an agent
// that predates versions).
func (c *Client) Version(ctx context.Context) (int, error) {
	var res PingResult
	if err := c.call(ctx, Request{Op: OpPing}, &res); err != nil {
		return 0, fmt.Errorf("agent ping: %w", err)
	}
	return max(res.Version, 1), nil
}

// Spawn starts req as a job: a process the agent runs on its own, which
// outlives this client and its connection, and whose output the agent
// keeps, up to opts.Buffer bytes (0 for DefaultJobBuffer), for Attach;
// opts.Meta (JSON, or nil) is kept with it and given back in its JobInfo.
// req's streams are not used: its input goes through Input, unless
// opts.CloseStdin closes it at once (version 4).
func (c *Client) Spawn(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions) (runtime.JobInfo, error) {
	wire, err := execWire(OpSpawn, req)
	if err != nil {
		return runtime.JobInfo{}, fmt.Errorf("agent spawn: %w", err)
	}
	wire.BufferBytes, wire.Meta, wire.Close = opts.Buffer, opts.Meta, opts.CloseStdin
	var info JobInfo
	if err := c.call(ctx, wire, &info); err != nil {
		return runtime.JobInfo{}, fmt.Errorf("agent spawn: %w", err)
	}
	return info.runtime(), nil
}

func (j JobInfo) runtime() runtime.JobInfo {
	out := runtime.JobInfo{Pid: j.Pid, Started: time.UnixMilli(j.StartedMS), TTY: j.TTY, Running: j.Running,
		Err: j.Error, Output: j.Output, Dropped: j.Dropped, Meta: j.Meta}
	if j.Exit != nil {
		st := j.Exit.status()
		out.Exit = &st
	}
	if j.EndedMS > 0 {
		out.Ended = time.UnixMilli(j.EndedMS)
	}
	return out
}

// Attach sends job pid's output from offset on to out and, as mode says,
// what it writes next until it ends (AttachHold: version 4). Cancelling ctx detaches; the job goes
// on.
func (c *Client) Attach(ctx context.Context, pid int, offset int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	end, err := c.attach(ctx, pid, offset, mode, out)
	if err != nil {
		return end, fmt.Errorf("agent attach %d: %w", pid, err)
	}
	return end, nil
}

func (c *Client) attach(ctx context.Context, pid int, offset int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	end := runtime.JobEnd{Next: offset}
	cc, err := c.open(ctx, Request{Op: OpAttach, Pid: pid, Offset: offset,
		Follow: mode != runtime.AttachRead, Hold: mode == runtime.AttachHold})
	if err != nil {
		return end, err
	}
	defer cc.close()
	attached := false
	for {
		kind, p, err := cc.next()
		if err != nil {
			return end, err
		}
		switch {
		case kind == FrameAttached:
			var a AttachedFrame
			if err := json.Unmarshal(p, &a); err != nil || a.Dropped < 0 || a.Offset != end.Next+a.Dropped {
				return end, fmt.Errorf("%w: bad attached frame", errProtocol)
			}
			attached = true
			end.Next = a.Offset
			if a.Dropped > 0 {
				if err := out(runtime.JobOutput{Offset: a.Offset, Dropped: a.Dropped}); err != nil {
					return end, err
				}
			}
		case !attached:
			return end, fmt.Errorf("%w: frame %q before the attached frame", errProtocol, kind)
		case kind == FrameStdout || kind == FrameStderr:
			if err := out(runtime.JobOutput{Stream: streamName(kind), Offset: end.Next, Data: p}); err != nil {
				return end, err
			}
			end.Next += int64(len(p))
		case kind == FrameExit:
			var x ExitFrame
			if err := json.Unmarshal(p, &x); err != nil {
				return end, fmt.Errorf("%w: bad exit frame: %v", errProtocol, err)
			}
			st := x.status()
			end.Exit = &st
			return end, nil
		case kind == FrameResult:
			var info JobInfo
			if err := json.Unmarshal(p, &info); err != nil {
				return end, fmt.Errorf("%w: bad result: %v", errProtocol, err)
			}
			ri := info.runtime()
			end.Info = &ri
			return end, nil
		default:
			return end, fmt.Errorf("%w: unexpected frame %q", errProtocol, kind)
		}
	}
}

// Input writes r to job pid's stdin and, with closeStdin, closes it
// after (a job on a terminal keeps it: type ^D).
func (c *Client) Input(ctx context.Context, pid int, r io.Reader, closeStdin bool) error {
	cc, err := c.open(ctx, Request{Op: OpInput, Pid: pid, Close: closeStdin})
	if err != nil {
		return fmt.Errorf("agent input %d: %w", pid, err)
	}
	defer cc.close()
	go cc.sendStream(r)
	if err := cc.result(nil); err != nil {
		if src := cc.srcErr.Load(); src != nil {
			return fmt.Errorf("agent input %d: read input: %w", pid, *src)
		}
		return fmt.Errorf("agent input %d: %w", pid, err)
	}
	return nil
}

// Jobs lists the agent's jobs, running or ended and not forgotten, oldest
// first.
func (c *Client) Jobs(ctx context.Context) ([]runtime.JobInfo, error) {
	cc, err := c.open(ctx, Request{Op: OpJobs})
	if err != nil {
		return nil, fmt.Errorf("agent jobs: %w", err)
	}
	defer cc.close()
	list := []runtime.JobInfo{}
	for {
		kind, p, err := cc.next()
		if err != nil {
			return nil, fmt.Errorf("agent jobs: %w", err)
		}
		switch kind {
		case FrameEntry:
			var j JobInfo
			if err := json.Unmarshal(p, &j); err != nil {
				return nil, fmt.Errorf("agent jobs: %w: bad entry: %v", errProtocol, err)
			}
			list = append(list, j.runtime())
		case FrameResult:
			return list, nil
		default:
			return nil, fmt.Errorf("agent jobs: %w: unexpected frame %q", errProtocol, kind)
		}
	}
}

// Forget drops ended job pid, its kept output and its exit status.
func (c *Client) Forget(ctx context.Context, pid int) error {
	if err := c.call(ctx, Request{Op: OpForget, Pid: pid}, nil); err != nil {
		return fmt.Errorf("agent forget %d: %w", pid, err)
	}
	return nil
}

// JobStdin is an input op held open: writes go to a job's stdin, resizes
// to its terminal, until Close or the job's end. It is the job's only
// input while open. Safe for concurrent use.
type JobStdin struct {
	pid  int
	cc   *clientConn
	done chan struct{} // the op has ended; err says how
	err  error
}

// OpenInput opens job pid's stdin for writes and, for a job on a terminal,
// resizes, until Close. It needs protocol version 3: a version 2 agent
// keeps the job from ending while its input is open.
func (c *Client) OpenInput(ctx context.Context, pid int) (*JobStdin, error) {
	cc, err := c.open(ctx, Request{Op: OpInput, Pid: pid})
	if err != nil {
		return nil, fmt.Errorf("agent input %d: %w", pid, err)
	}
	in := &JobStdin{pid: pid, cc: cc, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		in.err = cc.result(nil)
		if in.err == nil {
			in.err = io.ErrClosedPipe
		}
		cc.close()
	}()
	return in, nil
}

// failed is why the op ended, once it has.
func (in *JobStdin) failed() error {
	select {
	case <-in.done:
		return fmt.Errorf("agent input %d: %w", in.pid, in.err)
	default:
		return nil
	}
}

func (in *JobStdin) Write(p []byte) (int, error) {
	if err := in.failed(); err != nil {
		return 0, err
	}
	if err := in.cc.fw.write(FrameData, p); err != nil {
		<-in.done // the connection broke: the reader says why
		return 0, in.failed()
	}
	return len(p), nil
}

// Resize changes the job's terminal size.
func (in *JobStdin) Resize(size runtime.TTYSize) error {
	if size.Cols == 0 || size.Rows == 0 {
		return fmt.Errorf("resize to %dx%d: %w", size.Cols, size.Rows, runtime.ErrInvalid)
	}
	if err := in.failed(); err != nil {
		return err
	}
	if err := in.cc.fw.json(FrameResize, TTYSize{Cols: size.Cols, Rows: size.Rows}); err != nil {
		<-in.done
		return in.failed()
	}
	return nil
}

// Close ends the op; the job and its stdin go on.
func (in *JobStdin) Close() error {
	in.cc.close()
	<-in.done
	return nil
}
