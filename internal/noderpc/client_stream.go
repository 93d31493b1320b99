package noderpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// stream is the framed response body of a streaming call.
type stream struct {
	c    *Runtime
	ctx  context.Context
	body io.ReadCloser
	fr   frameReader
	stop func() bool
}

// open starts a streaming call. Its context ends it: the HTTP/2 client
// watches the context only until the response's head, and, after that,
// only once the request body has ended, which a stream's may never do.
// Closing the response body resets the stream, which the node sees as
// its request's context ending.
func (c *Runtime) open(ctx context.Context, method, path string, body io.Reader) (*stream, error) {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	return &stream{c: c, ctx: ctx, body: resp.Body, fr: frameReader{r: resp.Body}, stop: stop}, nil
}

// next returns the next frame. An error frame is returned as the node's
// error; a body that ends or breaks before its last frame, as the node
// being out of reach.
func (s *stream) next() (byte, []byte, error) {
	kind, p, err := s.fr.next()
	if errors.Is(err, io.EOF) {
		err = errors.New("the stream was cut")
	}
	if err != nil {
		return 0, nil, s.c.unreachable(s.ctx, err)
	}
	if kind == frameError {
		var we wireError
		if err := json.Unmarshal(p, &we); err != nil {
			return 0, nil, s.violation(fmt.Sprintf("bad error frame: %v", err))
		}
		return 0, nil, we.err()
	}
	return kind, p, nil
}

// head reads the stream's head frame into v (unless nil).
func (s *stream) head(v any) error {
	kind, p, err := s.next()
	if err != nil {
		return err
	}
	if kind != frameHead {
		return s.violation(fmt.Sprintf("frame %q before the head", kind))
	}
	if v != nil && json.Unmarshal(p, v) != nil {
		return s.violation("bad head frame")
	}
	return nil
}

// violation is a node that broke the protocol: out of reach as far as the
// caller can tell.
func (s *stream) violation(what string) error {
	return s.c.unreachable(s.ctx, fmt.Errorf("%w: %s", errProtocol, what))
}

func (s *stream) close() {
	s.stop()
	s.body.Close()
}

// frame is one encoded frame.
func frame(kind byte, p []byte) []byte {
	b := append([]byte{kind}, binary.BigEndian.AppendUint32(nil, uint32(len(p)))...)
	return append(b, p...)
}

// closeWait bounds how long a Close waits for the node to confirm it (a
// listener closed, a stdin let go) before it abandons the call.
const closeWait = 5 * time.Second

// duplex is the client's side of a call whose request body is frames:
// some of them (w, a, and a held stdin's d) are answered, in order, by a
// k frame that the response's reader hands to reply.
type duplex struct {
	pr      *io.PipeReader // the request body
	pw      *io.PipeWriter
	fw      frameWriter // over pw
	callMu  sync.Mutex  // one answered frame at a time
	replies chan []byte
	done    chan struct{} // the response has ended
	err     error         // why, once done
}

func newDuplex() *duplex {
	pr, pw := io.Pipe()
	return &duplex{pr: pr, pw: pw, fw: frameWriter{w: pw}, replies: make(chan []byte, 1), done: make(chan struct{})}
}

// call sends a frame the node answers and returns its answer.
func (d *duplex) call(kind byte, p []byte) (reply, error) {
	d.callMu.Lock()
	defer d.callMu.Unlock()
	var r reply
	if err := d.fw.write(kind, p); err != nil {
		<-d.done // the body is closed only once the response ended
		return r, d.err
	}
	var b []byte
	select {
	case b = <-d.replies:
	case <-d.done:
		select {
		case b = <-d.replies:
		default:
			return r, d.err
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%w: bad reply: %v", errProtocol, err)
	}
	return r, nil
}

// reply hands a k frame to the call waiting for it. One that answers no
// call (a node that breaks the protocol) is dropped.
func (d *duplex) reply(p []byte) {
	select {
	case d.replies <- bytes.Clone(p):
	default:
	}
}

// finish records why the response ended (io.ErrClosedPipe when it ended
// as it should) and closes the request body: the node reads to its end.
func (d *duplex) finish(err error) {
	if err == nil {
		err = io.ErrClosedPipe
	}
	d.err = err
	close(d.done)
	d.pw.Close()
}
