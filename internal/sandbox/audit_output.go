package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/live"
)

// outRecorder records one stream of output (a command's stdout, a
// terminal's output or input): scrubbed of secret values (even one cut
// across writes), in pieces of up to 32 KiB, each recorded at most 50 ms
// after its first byte, so the log keeps the timing without an event per
// byte. Safe for concurrent use.
type outRecorder struct {
	r      auditor
	typ    string
	fields map[string]any

	mu    sync.Mutex
	sc    *audit.Stream
	buf   []byte
	timer *time.Timer // pending emit of buf
	// pos, when tracked, is the offset in the process's output after the
	// last byte written: each piece records it as "end", so a daemon that
	// follows the process again after a restart knows what is recorded.
	pos     int64
	tracked bool
}

const (
	recordPiece = 32 << 10
	recordDelay = 50 * time.Millisecond
)

func (r auditor) outRecorder(typ string, sc *audit.Scrubber, fields map[string]any) *outRecorder {
	return &outRecorder{r: r, typ: typ, fields: fields, sc: sc.Stream()}
}

func (o *outRecorder) Write(p []byte) (int, error) {
	if o == nil || o.r.a == nil {
		return len(p), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.write(p)
	return len(p), nil
}

// WriteEnd records p, which ends at offset end of the process's output.
func (o *outRecorder) WriteEnd(p []byte, end int64) {
	if o == nil || o.r.a == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pos, o.tracked = end, true
	o.write(p)
}

// write records p. o.mu is held.
func (o *outRecorder) write(p []byte) {
	o.buf = append(o.buf, o.sc.Write(p)...)
	switch {
	case len(o.buf) >= recordPiece:
		o.emit()
	case len(o.buf) > 0 && o.timer == nil:
		o.timer = time.AfterFunc(recordDelay, func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.timer = nil
			o.emit()
		})
	}
}

// Flush records what is held, before whatever is recorded next.
func (o *outRecorder) Flush() {
	if o == nil || o.r.a == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.buf = append(o.buf, o.sc.Flush()...)
	o.emit()
}

// emit records buf, in pieces of up to recordPiece. o.mu is held.
func (o *outRecorder) emit() {
	for p := o.buf; len(p) > 0; {
		n := min(len(p), recordPiece)
		f := make(map[string]any, len(o.fields)+3)
		for k, v := range o.fields {
			f[k] = v
		}
		if o.tracked {
			// Where this piece ends in the process's output (scrubbing
			// may have changed a length a little).
			f["end"] = o.pos - int64(len(p)-n)
		}
		o.r.output(o.typ, f, p[:n])
		p = p[n:]
	}
	o.buf = o.buf[:0]
}

// tee writes to w what it records.
type tee struct {
	rec *outRecorder
	w   io.Writer
}

func (t tee) Write(p []byte) (int, error) {
	t.rec.Write(p)
	return t.w.Write(p)
}

// execRecord records one command: exec.started when made, its output as
// it comes, exec.exited at its end.
type execRecord struct {
	r        auditor
	id       string
	session  string
	out, err *outRecorder
}

// recordExec records the start of req in sandbox id and returns the
// recorder of the rest. req.Cwd is the directory as resolved for the
// runtime. session is the session the command runs in, if
// any.
func (s *Service) recordExec(c Caller, id string, req ExecRequest, background bool, session string) *execRecord {
	r := s.auditor(c, id, c.TenantID)
	sc := s.scrubber(id)
	e := &execRecord{r: r, id: "ex-" + randomHex(8), session: session}
	data := map[string]any{"exec_id": e.id, "env": slices.Sorted(maps.Keys(req.Env))}
	if req.Cwd != "" { // absent: the sandbox's workdir
		data["cwd"] = sc.String(req.Cwd)
	}
	if len(req.Cmd) > 0 {
		argv := make([]string, len(req.Cmd))
		for i, a := range req.Cmd {
			argv[i] = sc.String(a)
		}
		data["argv"] = argv
	} else {
		data["command"] = sc.String(req.Command)
	}
	if background {
		data["background"] = true
	}
	if session != "" {
		data["session_id"] = session
	}
	r.record(audit.ExecStarted, data)
	if session == "" {
		e.out = r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": e.id, "stream": "stdout"})
		e.err = r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": e.id, "stream": "stderr"})
	}
	return e
}

// randomHex is n random bytes, in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tees returns writers that record what they pass to stdout and stderr.
func (e *execRecord) tees(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	return tee{e.out, stdout}, tee{e.err, stderr}
}

func (e *execRecord) ID() string          { return e.id }
func (e *execRecord) Actor() string       { return e.r.actor }
func (e *execRecord) Stdout() live.Output { return e.out }
func (e *execRecord) Stderr() live.Output { return e.err }

// Exited records the command's end: its status, or err when it broke off.
func (e *execRecord) Exited(res ExecResult, err error) {
	e.out.Flush()
	e.err.Flush()
	data := map[string]any{"exec_id": e.id, "exit_code": res.ExitCode, "signal": res.Signal,
		"timed_out": res.TimedOut, "oom_killed": res.OOMKilled, "duration_ms": res.DurationMS}
	if e.session != "" {
		data["session_id"] = e.session
	}
	if err != nil {
		data["error"] = err.Error()
	}
	e.r.record(audit.ExecExited, data)
}
