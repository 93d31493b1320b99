package noderpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/airlockhq/airlock/internal/runtime"
)

func (s *server) streamRoutes() {
	s.mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/exec", s.exec)
	s.mux.HandleFunc("GET "+prefix+"/sandboxes/{id}/files", s.readFile)
	s.mux.HandleFunc("GET "+prefix+"/sandboxes/{id}/jobs/{pid}/output", s.attach)
	s.mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/jobs/{pid}/stdin", s.openInput)
	s.mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/dial", s.dial)
	s.mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/listen", s.listen)
	s.mux.HandleFunc("POST "+prefix+"/conns/{conn}", s.pickup)
}

// responseFrames is w as a frame stream, each frame flushed as written.
// The request body stays readable meanwhile (HTTP/1.1 needs asking).
func responseFrames(w http.ResponseWriter) *frameWriter {
	rc := http.NewResponseController(w)
	// HTTP/2 is full duplex without asking, and says so with an error.
	_ = rc.EnableFullDuplex()
	w.Header().Set("Content-Type", "application/x-airlock-frames")
	return &frameWriter{w: w, flush: rc.Flush}
}

// final writes the last frame of a call whose handler returns right
// after, unflushed: it goes out with the response's end, in one write,
// and the client wakes once for both. A handler that waits on the client
// after its last frame (for the request body's end) must flush it.
func (f *frameWriter) final(kind byte, v any) error {
	f.mu.Lock()
	f.flush = nil
	f.mu.Unlock()
	return f.json(kind, v)
}

// fail ends a stream with err: an HTTP error before its first frame, an
// error frame after.
func (f *frameWriter) fail(w http.ResponseWriter, err error) {
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if !started {
		writeError(w, err)
		return
	}
	// A client gone before the end has nobody to tell.
	_ = f.json(frameError, wireErr(err))
}

// streamWriter writes what it is given as data frames of one kind.
type streamWriter struct {
	f    *frameWriter
	kind byte
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.f.data(w.kind, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *server) readFile(w http.ResponseWriter, r *http.Request) {
	sb, err := s.sandbox(r)
	if err != nil {
		writeError(w, err)
		return
	}
	fw := responseFrames(w)
	n, err := sb.ReadFile(r.Context(), r.URL.Query().Get("path"), streamWriter{fw, frameData})
	if err != nil {
		fw.fail(w, err)
		return
	}
	_ = fw.final(frameResult, sizeReply{n})
}

func (s *server) exec(w http.ResponseWriter, r *http.Request) {
	sb, err := s.sandbox(r)
	if err != nil {
		writeError(w, err)
		return
	}
	in := &frameReader{r: r.Body}
	var wire execWire
	if err := in.request("exec", &wire); err != nil {
		writeError(w, err)
		return
	}
	req := wire.request()
	fw := responseFrames(w)
	var stdin *io.PipeReader
	var stdinW *io.PipeWriter
	if wire.Stdin {
		stdin, stdinW = io.Pipe()
		req.Stdin = stdin
	}
	if wire.Stdout {
		req.Stdout = streamWriter{fw, frameStdout}
	}
	if wire.Stderr {
		req.Stderr = streamWriter{fw, frameStderr}
	}
	// Holding the writer until the head is out keeps any output, which
	// may come before Start returns, behind the pid.
	fw.mu.Lock()
	proc, err := sb.Start(r.Context(), req)
	if err != nil {
		fw.mu.Unlock()
		if stdin != nil {
			stdin.Close()
		}
		writeError(w, err)
		return
	}
	head, _ := json.Marshal(struct{ Pid int }{proc.Pid()})
	_ = fw.writeLocked(frameHead, head) // a client gone is seen by Wait
	fw.mu.Unlock()
	inDone := make(chan struct{})
	var term any // the local runtime's process offers a resize without a terminal
	if req.TTY != nil {
		term = proc
	}
	go func() {
		defer close(inDone)
		execInput(in, term, stdinW, fw)
	}()
	st, err := proc.Wait()
	if stdin != nil {
		// Nothing reads stdin any more: input still coming is dropped.
		stdin.CloseWithError(io.ErrClosedPipe)
	}
	if err != nil {
		fw.fail(w, err)
	} else {
		_ = fw.json(frameResult, st)
	}
	// The client ends its body once it has the result (or is gone): no
	// frame may be written after the handler returns.
	<-inDone
}

// execInput feeds an exec's request frames to its process: stdin to
// stdinW (nil when the caller gave none), resizes to term (nil when it
// runs on no terminal).
func execInput(in *frameReader, term any, stdinW *io.PipeWriter, fw *frameWriter) {
	for {
		kind, p, err := in.next()
		if err != nil {
			if stdinW != nil {
				// A body cut short fails the process's stdin as a local
				// caller's failing reader would.
				stdinW.CloseWithError(err)
			}
			return
		}
		switch {
		case kind == frameData && stdinW != nil:
			// A process that closed its stdin drops the rest, as a pipe
			// would.
			_, _ = stdinW.Write(p)
		case kind == frameEnd && stdinW != nil:
			stdinW.Close()
		case kind == frameResize:
			err := resize(term, p)
			_ = fw.json(frameReply, reply{Error: wireErr(err)})
		}
		// Stdin a client did not declare, or its end twice, is dropped.
	}
}

// resize applies a w frame's size to the terminal of x (a process or a
// held stdin).
func resize(x any, p []byte) error {
	var size runtime.TTYSize
	if err := json.Unmarshal(p, &size); err != nil {
		return fmt.Errorf("%w: terminal size: %v", runtime.ErrInvalid, err)
	}
	r, ok := x.(runtime.Resizer)
	if !ok {
		return fmt.Errorf("%w: this process has no terminal", runtime.ErrInvalid)
	}
	return r.Resize(size)
}

func (s *server) attach(w http.ResponseWriter, r *http.Request) {
	jr, pid, err := s.job(r)
	var offset, mode int64
	if err == nil {
		offset, err = queryInt(r, "offset")
	}
	if err == nil {
		mode, err = queryInt(r, "mode")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	fw := responseFrames(w)
	var buf []byte
	end, err := jr.Attach(r.Context(), pid, offset, runtime.AttachMode(mode), func(o runtime.JobOutput) error {
		buf = appendJobOutput(buf[:0], o)
		return fw.write(frameJob, buf)
	})
	if err != nil {
		fw.fail(w, err)
		return
	}
	_ = fw.final(frameResult, toJobEndWire(end))
}

func (s *server) openInput(w http.ResponseWriter, r *http.Request) {
	jr, pid, err := s.job(r)
	if err != nil {
		writeError(w, err)
		return
	}
	stdin, err := jr.OpenInput(r.Context(), pid)
	if err != nil {
		writeError(w, err)
		return
	}
	fw := responseFrames(w)
	clean := fw.write(frameHead, nil) == nil && holdInput(&frameReader{r: r.Body}, stdin, fw)
	stdin.Close()
	if clean {
		_ = fw.write(frameEnd, nil) // the client's Close is done
	}
}

// holdInput answers each frame of a held stdin with what the runtime's
// stdin made of it, until the body ends: true when the client ended it,
// false when it reset the stream or is gone.
func holdInput(in *frameReader, stdin runtime.JobStdin, fw *frameWriter) bool {
	for {
		kind, p, err := in.next()
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		switch kind {
		case frameData:
			_, err = stdin.Write(p)
		case frameResize:
			err = resize(stdin, p)
		default:
			err = fmt.Errorf("%w: frame %q on a job's stdin", errProtocol, kind)
		}
		if fw.json(frameReply, reply{Error: wireErr(err)}) != nil {
			return false
		}
	}
}

func (s *server) dial(w http.ResponseWriter, r *http.Request) {
	d, err := sandboxAs[runtime.Dialer](s, r, "be connected into")
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	c, err := d.Dial(r.Context(), q.Get("network"), q.Get("address"))
	if err != nil {
		writeError(w, err)
		return
	}
	serveConn(w, r, c)
}

// serveConn carries c both ways: the request body to it, unframed, and
// what it reads as data frames, until both ways have ended. The body's
// end is the client's half-close, answered by a k frame once all it sent
// was written to c; a reset of the stream (the client's Close, after that
// answer, or a client gone) closes c.
func serveConn(w http.ResponseWriter, r *http.Request, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(r.Context(), func() { c.Close() })
	defer stop()
	fw := responseFrames(w)
	if fw.json(frameHead, headOf(c.LocalAddr(), c.RemoteAddr())) != nil {
		return
	}
	up := make(chan struct{})
	go func() {
		defer close(up)
		if _, err := io.Copy(c, r.Body); err != nil {
			c.Close() // c refuses what the client sends, or the client is gone
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
			c.Close() // no half-close: end both ways
		}
		_ = fw.write(frameReply, nil)
	}()
	buf := make([]byte, dataChunk)
	for {
		n, err := c.Read(buf)
		if n > 0 && fw.write(frameData, buf[:n]) != nil {
			c.Close() // the client is gone
			break
		}
		if errors.Is(err, io.EOF) {
			_ = fw.write(frameEnd, nil)
			break
		}
		if err != nil {
			fw.fail(w, err)
			break
		}
	}
	// The client ends its body, or resets the stream, by and by.
	<-up
}

func headOf(local, remote net.Addr) connHead {
	h := connHead{Network: local.Network(), Local: local.String()}
	if remote != nil {
		h.Remote = remote.String()
	}
	return h
}

func (s *server) listen(w http.ResponseWriter, r *http.Request) {
	l, err := sandboxAs[runtime.Listener](s, r, "be listened in")
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	ln, err := l.Listen(r.Context(), q.Get("network"), q.Get("address"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer ln.Close()
	fw := responseFrames(w)
	if fw.json(frameHead, headOf(ln.Addr(), nil)) != nil {
		return
	}
	// One accept per a frame, so connections wait in the sandbox's
	// backlog, as they would for a local listener, until the client asks.
	wants := make(chan struct{})
	go func() {
		defer close(wants)
		defer ln.Close() // the client closed the listener: ends an Accept
		in := &frameReader{r: r.Body}
		for {
			if kind, _, err := in.next(); err != nil || kind != frameAccept {
				return
			}
			select {
			case wants <- struct{}{}:
			case <-r.Context().Done():
				return
			}
		}
	}()
	owner := new(int)
	defer s.conns.drop(owner)
	for range wants {
		c, err := ln.Accept()
		rep := reply{Error: wireErr(err)}
		if err == nil {
			rep.Conn = s.conns.put(c, owner)
		}
		_ = fw.json(frameReply, rep)
	}
	_ = fw.write(frameEnd, nil)
}

func (s *server) pickup(w http.ResponseWriter, r *http.Request) {
	c := s.conns.take(r.PathValue("conn"))
	if c == nil {
		writeError(w, fmt.Errorf("%w: connection %s is not waiting to be picked up", runtime.ErrNotFound, r.PathValue("conn")))
		return
	}
	serveConn(w, r, c)
}
