package noderpc

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/airlockhq/airlock/internal/runtime"
)

// process is a process started on a node: its exec call's stream.
type process struct {
	pid  int
	d    *duplex
	done chan struct{}
	// Set before done closes.
	status runtime.ExitStatus
	err    error
	// srcErr is the caller's stdin failing, which ends the call.
	srcMu  sync.Mutex
	srcErr error
}

// ttyProcess is a process on a terminal: only it offers Resize (the local
// runtime's offers it on every process, and a resize of one without a
// terminal would reach its stdin).
type ttyProcess struct{ *process }

var (
	_ runtime.Process = (*process)(nil)
	_ runtime.Resizer = ttyProcess{}
)

func (s *sandbox) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.ExitStatus, error) {
	p, err := s.Start(ctx, req)
	if err != nil {
		return runtime.ExitStatus{}, err
	}
	return p.Wait()
}

// Start runs req on the node. Cancelling ctx resets the call, and the
// node's runtime kills the process tree as it does for a local caller.
// As with os/exec, a req.Stdin that blocks forever keeps its pump
// goroutine until it returns, although Wait does not wait for it.
func (s *sandbox) Start(ctx context.Context, req runtime.ExecRequest) (runtime.Process, error) {
	open, err := json.Marshal(toExecWire(req))
	if err != nil {
		return nil, fmt.Errorf("%w: exec request: %v", runtime.ErrInvalid, err)
	}
	d := newDuplex()
	// Closable: the HTTP client closes the body to end a call, and waits
	// for its reading to stop.
	body := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(frame(frameRequest, open)), d.pr), d.pr}
	st, err := s.rt.open(ctx, http.MethodPost, s.path("exec", nil), body)
	if err != nil {
		d.pw.Close()
		return nil, err
	}
	var head struct{ Pid int }
	if err := st.head(&head); err != nil {
		st.close()
		d.pw.Close()
		return nil, err
	}
	p := &process{pid: head.Pid, d: d, done: make(chan struct{})}
	if req.Stdin != nil {
		go p.pump(req.Stdin)
	}
	go p.collect(st, req.Stdout, req.Stderr)
	if req.TTY != nil {
		return ttyProcess{p}, nil
	}
	return p, nil
}

func (p *process) Pid() int { return p.pid }

// Wait blocks until the process has exited and its output has been
// written to the request's writers. It may be called more than once.
func (p *process) Wait() (runtime.ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// Resize changes the size of the process's terminal.
func (p ttyProcess) Resize(size runtime.TTYSize) error {
	b, err := json.Marshal(size)
	if err != nil {
		return err
	}
	r, err := p.d.call(frameResize, b)
	if err != nil {
		return fmt.Errorf("node exec %d: resize: %w", p.pid, err)
	}
	if r.Error != nil {
		return r.Error.err()
	}
	return nil
}

// pump sends stdin as data frames, then its end.
func (p *process) pump(stdin io.Reader) {
	buf := make([]byte, dataChunk)
	for {
		n, err := stdin.Read(buf)
		if n > 0 && p.d.fw.write(frameData, buf[:n]) != nil {
			return // the call has ended
		}
		if err == io.EOF {
			_ = p.d.fw.write(frameEnd, nil) // fails only once the call ended
			return
		}
		if err != nil {
			// As beside the runtime, a failing stdin ends the exec: the
			// call is reset, and the node's runtime kills the tree.
			p.srcMu.Lock()
			p.srcErr = err
			p.srcMu.Unlock()
			p.d.pw.CloseWithError(err)
			return
		}
	}
}

// collect writes output frames until the result. A failing writer does
// not stop the process (exec.Cmd would not either); its error is returned
// from Wait alongside the status.
func (p *process) collect(st *stream, stdout, stderr io.Writer) {
	defer close(p.done)
	defer st.close()
	// One goroutine writes both streams, so a caller may pass the same
	// writer for stdout and stderr.
	out, errw := &sink{w: stdout}, &sink{w: stderr}
	p.err = p.read(st, out, errw)
	p.d.finish(p.err)
	if p.err == nil && (out.err != nil || errw.err != nil) {
		p.err = fmt.Errorf("node exec %d: write output: %w", p.pid, cmp.Or(out.err, errw.err))
	}
	p.srcMu.Lock()
	if p.srcErr != nil && p.err != nil {
		p.err = fmt.Errorf("node exec %d: read stdin: %w", p.pid, p.srcErr)
	}
	p.srcMu.Unlock()
}

func (p *process) read(st *stream, out, errw *sink) error {
	for {
		kind, b, err := st.next()
		if err != nil {
			return err
		}
		switch kind {
		case frameStdout:
			out.write(b)
		case frameStderr:
			errw.write(b)
		case frameReply:
			p.d.reply(b)
		case frameResult:
			if err := json.Unmarshal(b, &p.status); err != nil {
				return st.violation("bad exit status")
			}
			return nil
		default:
			return st.violation(fmt.Sprintf("frame %q in an exec", kind))
		}
	}
}

// sink discards output after its first error and when w is nil.
type sink struct {
	w   io.Writer
	err error
}

func (s *sink) write(p []byte) {
	if s.w != nil && s.err == nil {
		_, s.err = s.w.Write(p)
	}
}
