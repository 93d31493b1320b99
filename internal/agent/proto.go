package agent

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"syscall"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Protocol limits. A frame payload is small enough that neither side ever
// buffers more than one frame per stream.
const (
	MaxPayload = 64 << 10
	MaxRequest = 1 << 20
	headerSize = 5
)

// Frame kinds; see the package comment for who sends which.
const (
	FrameData      byte = 'd'
	FrameEnd       byte = 'z'
	FrameStarted   byte = 's'
	FrameStdout    byte = 'o'
	FrameStderr    byte = 'e'
	FrameKeepalive byte = 'k'
	FrameEntry     byte = 'n'
	FrameExit      byte = 'x'
	FrameResult    byte = 'r'
	FrameError     byte = '!'
	FrameResize    byte = 'w' // client: TTYSize JSON, for an exec on a terminal
	FrameAttached  byte = 'a' // agent: AttachedFrame, the first frame of an attach
)

// ProtocolVersion is what this agent speaks, reported by ping. Version 1
// (an empty ping result) had no jobs: spawn, attach, input, jobs, forget.
// Version 2's input op held a job's stdin past the job's end, so a client
// keeping one open (a terminal's) kept the job from ending: version 3
// ends it with the job, and only then are terminal jobs used. Version 4
// adds attach's "hold" (a reader that slows the job rather than lose its
// output) and spawn's "close" (stdin closed at once), with which a
// command streamed to a client runs as a job.
const ProtocolVersion = 4

// PingResult is the result of ping.
type PingResult struct {
	Version int `json:"version"`
}

// Operations.
const (
	OpPing   = "ping"
	OpExec   = "exec"
	OpSignal = "signal"
	OpRead   = "read"
	OpWrite  = "write"
	OpStat   = "stat"
	OpList   = "list"
	OpMkdir  = "mkdir"
	OpRemove = "remove"
	OpRename = "rename"
	// Jobs: processes the agent runs on its own, whose output it keeps, so
	// that they outlive the connection (and the daemon) that started them.
	OpSpawn  = "spawn"
	OpAttach = "attach"
	OpInput  = "input"
	OpJobs   = "jobs"
	OpForget = "forget"
)

// Request is the JSON line that opens every connection.
type Request struct {
	Op string `json:"op"`

	// exec
	Argv      []string          `json:"argv,omitempty"`
	Shell     string            `json:"shell,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	// TTY runs the process on a new terminal of this size: its stdin,
	// stdout and stderr are the terminal, and all output comes as stdout.
	TTY *TTYSize `json:"tty,omitempty"`

	// spawn: how much of the job's output the agent keeps (0: the
	// default), and what the host keeps with the job (at most MaxJobMeta
	// bytes of JSON, given back in its JobInfo): who started it and why,
	// for a daemon that comes back after a restart
	BufferBytes int64           `json:"buffer_bytes,omitempty"`
	Meta        json.RawMessage `json:"meta,omitempty"`

	// attach: from which output offset, and whether to follow until the
	// job ends; input: close the job's stdin after this input; spawn
	// (version 4): start the job with its stdin closed
	Offset int64 `json:"offset,omitempty"`
	Follow bool  `json:"follow,omitempty"`
	Close  bool  `json:"close,omitempty"`
	// Hold (attach, version 4): while attached, the job's output is not
	// dropped past what this reader has read; its process waits instead.
	Hold bool `json:"hold,omitempty"`

	// signal; attach, input and forget name their job by pid
	Pid    int  `json:"pid,omitempty"`
	Signal int  `json:"signal,omitempty"`
	Group  bool `json:"group,omitempty"`

	// files; Mode holds unix permission bits (07777)
	Path      string `json:"path,omitempty"`
	To        string `json:"to,omitempty"`
	Mode      uint32 `json:"mode,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
}

// TTYSize is a terminal's size in character cells.
type TTYSize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// StartedFrame is the payload of FrameStarted.
type StartedFrame struct {
	Pid int `json:"pid"`
}

// ExitFrame is the payload of FrameExit.
type ExitFrame struct {
	Code       int     `json:"code"`
	Signal     int     `json:"signal,omitempty"`
	TimedOut   bool    `json:"timed_out,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// JobInfo describes a job (the result of spawn, an entry of jobs, and the
// last frame of an attach that does not end with the job's exit). Output
// offsets count the bytes of both streams together from the job's first.
type JobInfo struct {
	Pid       int             `json:"pid"`
	StartedMS int64           `json:"started_ms"` // Unix time in milliseconds
	TTY       bool            `json:"tty,omitempty"`
	Running   bool            `json:"running"`
	Exit      *ExitFrame      `json:"exit,omitempty"`
	Error     string          `json:"error,omitempty"` // why there is no exit status
	EndedMS   int64           `json:"ended_ms,omitempty"`
	Output    int64           `json:"output"`  // the offset after the newest byte
	Dropped   int64           `json:"dropped"` // bytes no longer kept, from offset 0
	Meta      json.RawMessage `json:"meta,omitempty"`
}

// AttachedFrame is the payload of FrameAttached: the offset the output
// frames that follow start at, and how many bytes from the requested
// offset on were no longer kept.
type AttachedFrame struct {
	Offset  int64 `json:"offset"`
	Dropped int64 `json:"dropped"`
}

// streamName names the stream of an output frame kind.
func streamName(kind byte) string {
	if kind == FrameStderr {
		return "stderr"
	}
	return "stdout"
}

// SizeResult is the FrameResult payload of read and write.
type SizeResult struct {
	Size int64 `json:"size"`
}

// Error codes carried by FrameError.
const (
	CodeNotFound   = "not_found"
	CodeInvalid    = "invalid"
	CodePermission = "permission"
	CodeExists     = "exists"
	CodeNotDir     = "not_dir"
	CodeIsDir      = "is_dir"
	CodeNoSpace    = "no_space"
	CodePidLimit   = "pid_limit"
	CodeInternal   = "internal"
	// CodeNotRegular refuses a read of a device, FIFO, socket or kernel
	// file (see runtime.NotRegularError); the message says what it is.
	CodeNotRegular = "not_regular"
	// CodeChanged fails a read of a file that changed while it was read.
	CodeChanged = "changed"
)

// Error is a failure reported by the agent (the payload of FrameError).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Is lets callers test agent errors against the runtime and io/fs kinds, so
// a missing file is both runtime.ErrNotFound and fs.ErrNotExist.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case CodeNotFound:
		return target == runtime.ErrNotFound || target == fs.ErrNotExist
	case CodeInvalid:
		return target == runtime.ErrInvalid || target == fs.ErrInvalid
	case CodePermission:
		return target == fs.ErrPermission
	case CodeExists:
		return target == fs.ErrExist
	case CodeNotDir:
		return target == syscall.ENOTDIR || target == runtime.ErrInvalid
	case CodeIsDir:
		return target == syscall.EISDIR || target == runtime.ErrInvalid
	case CodeNoSpace:
		return target == syscall.ENOSPC
	case CodePidLimit:
		return target == runtime.ErrPidLimit
	case CodeNotRegular:
		return target == runtime.ErrInvalid || target == fs.ErrInvalid
	case CodeChanged:
		return target == runtime.ErrChanged
	}
	return false
}

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

var errProtocol = errors.New("agent protocol violation")

// readRequest reads the opening JSON line. Unknown fields are refused: an
// older agent must not silently ignore an option a newer host relies on.
func readRequest(br *bufio.Reader) (Request, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxRequest {
			return Request{}, errorf(CodeInvalid, "request longer than %d bytes", MaxRequest)
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return Request{}, fmt.Errorf("read request: %w", err)
		}
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, errorf(CodeInvalid, "decode request: %v", err)
	}
	return req, nil
}

// writeRequest sends req and, with endInput, an end frame after it in the
// same write: a command with no input gets its EOF without the client
// waiting for it to start, and the agent without being woken again.
func writeRequest(w io.Writer, req Request, endInput bool) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	b = append(b, '\n')
	if endInput {
		b = append(b, FrameEnd, 0, 0, 0, 0)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	return nil
}

// readFrame reads one frame into *buf and returns the payload as a slice
// of it, valid until the next call.
func readFrame(r io.Reader, buf *[]byte) (byte, []byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(h[1:]))
	if n > MaxPayload {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes", errProtocol, n)
	}
	p := grow(buf, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("read frame payload: %w", io.ErrUnexpectedEOF)
	}
	return h[0], p, nil
}

// grow returns (*buf)[:n], first replacing *buf by a larger one if it is
// shorter. Buffers start empty and grow to what a connection carries: most
// carry a request, a few small frames and a result, and every exec
// allocated 64 KiB buffers for each way (the agent collected garbage every
// dozen commands, the daemon every few).
func grow(buf *[]byte, n int) []byte {
	if len(*buf) < n {
		*buf = make([]byte, max(n, 2*len(*buf), 512))
	}
	return (*buf)[:n]
}

// frameWriter serialises frames from several goroutines (stdout, stderr,
// keepalive) onto one connection, one write per frame.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: w}
}

// write sends p as one or more frames of the given kind.
func (fw *frameWriter) write(kind byte, p []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), MaxPayload)
		b := grow(&fw.buf, headerSize+n)
		b[0] = kind
		binary.BigEndian.PutUint32(b[1:headerSize], uint32(n))
		copy(b[headerSize:], p[:n])
		if _, err := fw.w.Write(b); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func (fw *frameWriter) json(kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(b) > MaxPayload {
		// Splitting would break the one-frame-one-JSON-value rule.
		return fmt.Errorf("encode frame: %d bytes exceeds the frame limit", len(b))
	}
	return fw.write(kind, b)
}
