package noderpc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Protocol is the node API's version, sent in ProtocolHeader on every
// request.
const (
	Protocol       = 1
	ProtocolHeader = "Airlock-Node-Protocol"
)

// Bounds of what either side reads from the other (see the package doc).
const (
	maxFrame  = 1 << 20
	maxJSON   = 1 << 20
	dataChunk = 64 << 10
	// maxReply bounds a JSON reply the client reads. It is larger than
	// maxJSON because a directory listing or a job list has no bound of
	// its own: 64 MiB is some 300,000 entries.
	maxReply = 64 << 20
)

// Frame kinds.
const (
	frameRequest byte = 'q'
	frameHead    byte = 'h'
	frameData    byte = 'd'
	frameStdout  byte = 'o'
	frameStderr  byte = 'e'
	frameJob     byte = 'j'
	frameResize  byte = 'w'
	frameAccept  byte = 'a'
	frameReply   byte = 'k'
	frameResult  byte = 'r'
	frameError   byte = 'x'
	frameEnd     byte = 'z'
)

var errProtocol = errors.New("node protocol violation")

// frameWriter writes frames to one body; safe for concurrent use, so the
// writers of several streams can share it.
type frameWriter struct {
	mu      sync.Mutex
	w       io.Writer
	flush   func() error // after each frame, on a response
	started bool         // a frame has been written
}

func (f *frameWriter) write(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeLocked(kind, p)
}

// writeLocked writes a frame while the caller holds f.mu.
func (f *frameWriter) writeLocked(kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	f.started = true
	if _, err := f.w.Write(h[:]); err != nil {
		return err
	}
	if _, err := f.w.Write(p); err != nil {
		return err
	}
	if f.flush != nil {
		return f.flush()
	}
	return nil
}

func (f *frameWriter) json(kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame %q: %w", kind, err)
	}
	return f.write(kind, b)
}

// data writes p as data frames of at most dataChunk bytes.
func (f *frameWriter) data(kind byte, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), dataChunk)
		if err := f.write(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// frameReader reads frames of at most maxFrame bytes; a payload is valid
// until the next call.
type frameReader struct {
	r   io.Reader
	hdr [5]byte
	buf []byte
}

// next returns the next frame; io.EOF only where the body ends cleanly
// between frames.
func (f *frameReader) next() (byte, []byte, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(f.hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: a frame of %d bytes (at most %d)", errProtocol, n, maxFrame)
	}
	if uint32(cap(f.buf)) < n {
		f.buf = make([]byte, n)
	}
	p := f.buf[:n]
	if _, err := io.ReadFull(f.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return f.hdr[0], p, nil
}

// request reads a request body's first frame, its q, as JSON into v;
// what names the call in the error (ErrInvalid).
func (f *frameReader) request(what string, v any) error {
	kind, p, err := f.next()
	if err == nil && kind != frameRequest {
		err = fmt.Errorf("frame %q before the request", kind)
	}
	if err == nil {
		err = json.Unmarshal(p, v)
	}
	if err != nil {
		return fmt.Errorf("%w: %s request: %v", runtime.ErrInvalid, what, err)
	}
	return nil
}

// The arguments and replies of calls that return once.
type (
	idReply   struct{ ID string }
	sizeReply struct{ Size int64 }
	pidSignal struct{ Pid, Signal int }
	pathArgs  struct {
		Path      string
		Mode      fs.FileMode
		Recursive bool
	}
	renameArgs struct{ From, To string }
	commitArgs struct {
		Sandbox  string
		Template runtime.TemplateInfo
	}
)

// execWire is an ExecRequest without its streams, which say only whether
// the caller gave them: a nil Stdin is /dev/null, a nil Stdout discards.
type execWire struct {
	Argv    []string          `json:"argv,omitempty"`
	Shell   string            `json:"shell,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Timeout time.Duration     `json:"timeout,omitempty"` // nanoseconds
	TTY     *runtime.TTYSize  `json:"tty,omitempty"`
	Stdin   bool              `json:"stdin,omitempty"`
	Stdout  bool              `json:"stdout,omitempty"`
	Stderr  bool              `json:"stderr,omitempty"`
}

func toExecWire(r runtime.ExecRequest) execWire {
	return execWire{Argv: r.Argv, Shell: r.Shell, Env: r.Env, Cwd: r.Cwd, Timeout: r.Timeout, TTY: r.TTY,
		Stdin: r.Stdin != nil, Stdout: r.Stdout != nil, Stderr: r.Stderr != nil}
}

// request is the ExecRequest it describes; the caller sets the streams.
func (w execWire) request() runtime.ExecRequest {
	return runtime.ExecRequest{Argv: w.Argv, Shell: w.Shell, Env: w.Env, Cwd: w.Cwd, Timeout: w.Timeout, TTY: w.TTY}
}

// The job types' Meta is omitted when nil: a nil json.RawMessage encodes
// as null, which decodes as the four bytes "null", and the job would come
// back with metadata it never had.
type (
	spawnWire struct {
		Request execWire `json:"request"`
		Buffer  int64    `json:"buffer,omitempty"`
		// Meta, CloseStdin: as runtime.JobOptions.
		Meta       json.RawMessage `json:"meta,omitempty"`
		CloseStdin bool            `json:"close_stdin,omitempty"`
	}
	jobInfoWire struct {
		runtime.JobInfo
		Meta json.RawMessage `json:",omitempty"`
	}
	jobEndWire struct {
		Next int64
		Exit *runtime.ExitStatus
		Info *jobInfoWire
	}
)

func toJobInfoWire(j runtime.JobInfo) jobInfoWire { return jobInfoWire{j, j.Meta} }

func (w jobInfoWire) info() runtime.JobInfo {
	j := w.JobInfo
	j.Meta = w.Meta
	return j
}

func toJobEndWire(e runtime.JobEnd) jobEndWire {
	w := jobEndWire{Next: e.Next, Exit: e.Exit}
	if e.Info != nil {
		i := toJobInfoWire(*e.Info)
		w.Info = &i
	}
	return w
}

func (w jobEndWire) end() runtime.JobEnd {
	e := runtime.JobEnd{Next: w.Next, Exit: w.Exit}
	if w.Info != nil {
		i := w.Info.info()
		e.Info = &i
	}
	return e
}

// The j frame: a runtime.JobOutput in binary, its data unencoded.
const jobHeader = 1 + 8 + 8

var streams = [...]string{"", "stdout", "stderr"}

// appendJobOutput appends o's j frame payload to b.
func appendJobOutput(b []byte, o runtime.JobOutput) []byte {
	var stream byte
	for i, s := range streams {
		if s == o.Stream {
			stream = byte(i)
		}
	}
	b = append(b, stream)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(o.Dropped))
	return append(b, o.Data...)
}

func decodeJobOutput(p []byte) (runtime.JobOutput, error) {
	if len(p) < jobHeader || int(p[0]) >= len(streams) {
		return runtime.JobOutput{}, fmt.Errorf("%w: bad job output frame", errProtocol)
	}
	return runtime.JobOutput{
		Stream:  streams[p[0]],
		Offset:  int64(binary.BigEndian.Uint64(p[1:])),
		Dropped: int64(binary.BigEndian.Uint64(p[9:])),
		Data:    p[jobHeader:],
	}, nil
}

// connHead is the head of a connection's stream: its addresses as the
// sandbox sees them.
type connHead struct {
	Network string `json:"network"`
	Local   string `json:"local"`
	Remote  string `json:"remote"`
}

// reply is the payload of a k frame: what one request frame came to.
type reply struct {
	Error *wireError `json:"error,omitempty"`
	Conn  string     `json:"conn,omitempty"` // an accepted connection's id
}
