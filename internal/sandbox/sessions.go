package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/airlockhq/airlock/internal/audit"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// MaxSessions bounds the shells kept per sandbox.
const MaxSessions = 16

// ScrollbackCap bounds the terminal output a session keeps for clients
// that attach later; the oldest goes first.
const ScrollbackCap = 256 << 10

// Session modes.
const (
	// SessionModeExec is a shell driven by calls: quiet (no prompt, no
	// echo, no line editing) so each command's output and status come back
	// exactly. Attached clients watch the commands and their output.
	SessionModeExec = "exec"
	// SessionModeInteractive is a shell for a person at a terminal:
	// prompt, echo and line editing, driven only through attach.
	SessionModeInteractive = "interactive"
)

// SessionRequest is POST /v1/sandboxes/{id}/sessions.
type SessionRequest struct {
	Shell string            `json:"shell,omitempty"` // "bash", the default and only one
	Mode  string            `json:"mode,omitempty"`  // "exec" (the default) or "interactive"
	Cwd   string            `json:"cwd,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Cols  uint16            `json:"cols,omitempty"` // default 120
	Rows  uint16            `json:"rows,omitempty"` // default 40
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID        string    `json:"id"`
	Shell     string    `json:"shell"`
	Mode      string    `json:"mode"`
	State     string    `json:"state"` // "ready", "busy" or "ended"
	Cols      uint16    `json:"cols"`
	Rows      uint16    `json:"rows"`
	Attached  int       `json:"attached"` // clients attached to its terminal now
	CreatedAt time.Time `json:"created_at"`
}

// SessionExecRequest runs one command in a session's shell.
type SessionExecRequest struct {
	Command  string `json:"command"`
	TimeoutS int64  `json:"timeout_s,omitempty"` // default 60
}

// SessionExecResult is what one command in a session did.
type SessionExecResult struct {
	ExitCode   int     `json:"exit_code"`
	Output     string  `json:"output"` // stdout and stderr as the terminal showed them
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	Truncated  bool    `json:"truncated"`
}

// session is one shell on a terminal, kept between requests. In exec
// mode commands run in the shell itself (eval in a function), so cd,
// variables, functions, aliases and an activated virtualenv persist. Each
// command's end is a marker printed after it with a nonce drawn for that
// command only, so output that merely looks like a marker cannot end it
// early. Everything the terminal shows also goes to a bounded scrollback
// that attached clients read from.
type session struct {
	id      string
	shell   string
	mode    string
	created time.Time
	proc    runtime.Process
	input   *io.PipeWriter
	cancel  context.CancelFunc // kills the shell's whole tree
	tty     *outBuf            // scrollback; finished when the shell ends or is lost
	marks   markFilter         // used only by Write's goroutine
	rec     *outRecorder       // the terminal's output, into the audit log
	exited  chan struct{}      // closed once the shell's end is recorded

	run      sync.Mutex  // one command at a time
	busy     atomic.Bool // set while run is held, for info (which must not take run)
	attached atomic.Int32

	mu    sync.Mutex
	out   []byte // exec mode: output since the current command started
	live  bool   // the scrollback records (exec mode: once set up)
	size  runtime.TTYSize
	ended bool
	wake  chan struct{}
}

func (se *session) Write(p []byte) (int, error) {
	se.mu.Lock()
	defer se.mu.Unlock()
	// Shown (and recorded) before a waiting command learns of its end
	// marker, so its output is in the log before its exit.
	if se.live {
		shown := p
		if se.mode == SessionModeExec {
			shown = se.marks.filter(p)
		}
		se.show(shown)
	}
	if se.mode == SessionModeExec {
		// Bounded: a command's output past OutputCap is dropped (and said
		// so) but the tail is kept so the end marker is still found.
		se.out = append(se.out, p...)
		if len(se.out) > 2*OutputCap {
			se.out = append(se.out[:OutputCap:OutputCap], se.out[len(se.out)-OutputCap:]...)
		}
		close(se.wake)
		se.wake = make(chan struct{})
	}
	return len(p), nil
}

// show puts p on the terminal: into the scrollback and the audit log.
func (se *session) show(p []byte) {
	se.tty.Write("tty", p)
	se.rec.Write(p)
}

func (se *session) end() {
	se.mu.Lock()
	defer se.mu.Unlock()
	se.ended = true
	close(se.wake)
	se.wake = make(chan struct{})
}

// sessionSetup makes the shell quiet and machine-readable: no echo, no
// CR before LF, no line editing (a tab in a command is a tab), empty
// prompts, and a prompt hook that prints the end marker with the last
// command's status. The shell stays interactive so that ^C interrupts the
// command (a builtin read included), never the shell. The hook and the
// runner are read-only, so a command cannot switch the markers off.
const sessionSetup = `stty -echo -onlcr -icanon 2>/dev/null; set +o history; unset HISTFILE; PS1=''; PS2=''
__airlock_mark() { local rc=$?; printf '\036AIRLOCK-%s-%d\037\n' "$__airlock_n" "$rc"; PS1=''; PS2=''; }
__airlock_run() { __airlock_n=$1; local c; c=$(cat); eval "$c" </dev/tty; }
readonly -f __airlock_mark __airlock_run; readonly PROMPT_COMMAND=__airlock_mark; __airlock_n=`

// shells maps each mode's shells to their command lines. An interactive
// shell reads the usual rc files, as a person's terminal would.
var shells = map[string]map[string][]string{
	SessionModeExec:        {"bash": {"/bin/bash", "--noprofile", "--norc", "--noediting", "-i"}},
	SessionModeInteractive: {"bash": {"/bin/bash", "-i"}},
}

// validSize checks a terminal size.
func validSize(cols, rows uint16) error {
	if cols < 1 || cols > 1000 || rows < 1 || rows > 1000 {
		return fmt.Errorf("%w: terminal size %dx%d: want 1 to 1000 columns and rows", ErrInvalid, cols, rows)
	}
	return nil
}

func nonce() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateSession starts a shell on a terminal in a running sandbox.
func (s *Service) CreateSession(ctx context.Context, c Caller, id string, req SessionRequest) (SessionInfo, error) {
	if req.Shell == "" {
		req.Shell = "bash"
	}
	if req.Mode == "" {
		req.Mode = SessionModeExec
	}
	argv, ok := shells[req.Mode][req.Shell]
	if !ok {
		if shells[req.Mode] == nil {
			return SessionInfo{}, fmt.Errorf("%w: mode %q: want %q or %q", ErrInvalid, req.Mode, SessionModeExec, SessionModeInteractive)
		}
		return SessionInfo{}, fmt.Errorf("%w: shell %q: only bash is supported", ErrInvalid, req.Shell)
	}
	if req.Cols == 0 {
		req.Cols = 120
	}
	if req.Rows == 0 {
		req.Rows = 40
	}
	if err := validSize(req.Cols, req.Rows); err != nil {
		return SessionInfo{}, err
	}
	if err := ValidEnv(req.Env); err != nil {
		return SessionInfo{}, err
	}
	env := req.Env
	if req.Mode == SessionModeInteractive && env["TERM"] == "" {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["TERM"] = "xterm-256color"
	}
	sb, rreq, err := s.prepareExec(ctx, c, id, ExecRequest{Cmd: argv, Cwd: req.Cwd, Env: env})
	if err != nil {
		return SessionInfo{}, err
	}
	t := s.workload(id, true)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.sessions) >= MaxSessions {
		t.forgetEnded()
	}
	if len(t.sessions) >= MaxSessions {
		return SessionInfo{}, fmt.Errorf("%w: %d sessions are open in this sandbox", ErrLimitExceeded, MaxSessions)
	}
	pr, pw := io.Pipe()
	se := &session{id: "ses-" + nonce()[:16], shell: req.Shell, mode: req.Mode, created: s.now(), input: pw,
		tty: newOutBuf(ScrollbackCap), size: runtime.TTYSize{Cols: req.Cols, Rows: req.Rows}, wake: make(chan struct{}),
		live: req.Mode == SessionModeInteractive, exited: make(chan struct{})}
	r := s.auditor(c, id, c.TenantID)
	se.rec = r.outRecorder(audit.SessionOutput, s.scrubber(id), map[string]any{"session_id": se.id})
	rreq.Stdin, rreq.Stdout = pr, se
	size := se.size
	rreq.TTY = &size
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := sb.Start(pctx, rreq)
	if err != nil {
		cancel()
		pw.Close()
		return SessionInfo{}, s.execError(ctx, id, err)
	}
	se.cancel = cancel
	se.proc = proc
	go func() {
		defer close(se.exited)
		st, err := proc.Wait()
		pr.Close()
		se.rec.flush()
		// Ended before any attached client hears of the exit, so one that
		// asks right after it is told so.
		se.end()
		if err != nil {
			err = fmt.Errorf("%w: session %s: shell lost: %v", ErrUnavailable, se.id, err)
			why := err
			if _, _, e := se.tty.Status(); e.err != nil {
				why = e.err // deleted, or its sandbox destroyed: that is why
			}
			r.record(audit.SessionEnded, map[string]any{"session_id": se.id, "error": why.Error()})
			se.tty.Finish(ended{ExecResult{}, err, s.now()})
		} else {
			r.record(audit.SessionEnded, map[string]any{"session_id": se.id, "exit_code": st.Code, "signal": st.Signal})
			se.tty.Finish(ended{execResult(st), nil, s.now()})
		}
	}()
	created := func() {
		r.record(audit.SessionCreated, map[string]any{"session_id": se.id, "mode": se.mode, "shell": se.shell, "cols": se.size.Cols, "rows": se.size.Rows})
	}
	if se.mode == SessionModeInteractive {
		created()
		t.sessions[se.id] = se
		return se.info(), nil
	}
	// Wait for the setup's own marker: the shell is ready, and whatever
	// it printed before (the echo of the first line) is dropped.
	n := nonce()
	if _, err := io.WriteString(pw, sessionSetup+n+"\n"); err != nil {
		return SessionInfo{}, fmt.Errorf("%w: start session: %v", ErrUnavailable, err)
	}
	if _, _, err := se.await(ctx, n, 15*time.Second); err != nil {
		se.close()
		return SessionInfo{}, fmt.Errorf("%w: the shell did not start: %v", ErrUnavailable, err)
	}
	created()
	se.mu.Lock()
	se.live = true
	se.mu.Unlock()
	t.sessions[se.id] = se
	return se.info(), nil
}

var errSessionEnded = fmt.Errorf("%w: the session's shell has ended", ErrConflict)

// await waits for the marker with nonce n in the output, and returns what
// came before it and the status it carries.
func (se *session) await(ctx context.Context, n string, timeout time.Duration) ([]byte, int, error) {
	re := regexp.MustCompile("\x1eAIRLOCK-" + n + "-([0-9]+)\x1f\n?")
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		se.mu.Lock()
		m := re.FindSubmatchIndex(se.out)
		out, ended, wake := se.out, se.ended, se.wake
		if m != nil {
			se.out = append([]byte(nil), se.out[m[1]:]...)
		}
		se.mu.Unlock()
		if m != nil {
			code, _ := strconv.Atoi(string(out[m[2]:m[3]]))
			return bytes.Clone(out[:m[0]]), code, nil
		}
		if ended {
			return out, 0, errSessionEnded
		}
		select {
		case <-wake:
		case <-timer.C:
			return out, 0, context.DeadlineExceeded
		case <-ctx.Done():
			return out, 0, ctx.Err()
		}
	}
}

// sessionExec runs one command in the session's shell and returns once it
// ends. On timeout the command gets SIGINT (as ^C would send), and the
// session goes on.
func (s *Service) sessionExec(ctx context.Context, c Caller, id, sid string, req SessionExecRequest) (SessionExecResult, error) {
	if req.Command == "" {
		return SessionExecResult{}, fmt.Errorf("%w: command is required", ErrInvalid)
	}
	if strings.IndexByte(req.Command, 0) >= 0 {
		// A shell drops a NUL: what would run is not what was sent.
		return SessionExecResult{}, fmt.Errorf("%w: NUL byte in command", ErrInvalid)
	}
	if req.TimeoutS < 0 || req.TimeoutS > int64(MaxTimeout/time.Second) {
		return SessionExecResult{}, fmt.Errorf("%w: timeout_s %d must be between 0 and %d", ErrInvalid, req.TimeoutS, int64(MaxTimeout/time.Second))
	}
	timeout := time.Duration(req.TimeoutS) * time.Second
	if timeout == 0 {
		timeout = time.Minute
	}
	se, err := s.session(ctx, c, id, sid)
	if err != nil {
		return SessionExecResult{}, err
	}
	if se.mode == SessionModeExec {
		s.meterExec(id)
	}
	if se.mode != SessionModeExec {
		return SessionExecResult{}, fmt.Errorf("%w: session %s is interactive: attach to it to type; exec runs in sessions created with mode %q", ErrConflict, sid, SessionModeExec)
	}
	if !se.run.TryLock() {
		return SessionExecResult{}, fmt.Errorf("%w: session %s is running a command", ErrConflict, sid)
	}
	defer se.run.Unlock()
	se.busy.Store(true)
	defer se.busy.Store(false)
	defer s.idle.hold(id, s.now)()
	n := nonce()
	se.mu.Lock()
	se.out = se.out[:0]
	se.mu.Unlock()
	start := time.Now()
	// The command goes in as a here-document the runner reads whole: its
	// text is never parsed line by line by the shell's own input, and the
	// delimiter carries this command's nonce, which its text cannot hold.
	in := fmt.Sprintf("__airlock_run %s <<'AIRLOCK_EOF_%s'\n%s\nAIRLOCK_EOF_%s\n", n, n, req.Command, n)
	rec := s.recordExec(c, id, ExecRequest{Command: req.Command}, false, sid)
	s.auditor(c, id, c.TenantID).output(audit.SessionInput, map[string]any{"session_id": sid}, s.scrubber(id).Bytes([]byte(req.Command+"\n")))
	// Clients watching the terminal see the command as if typed (the
	// shell itself does not echo it).
	se.mu.Lock()
	se.show([]byte("$ " + strings.ReplaceAll(req.Command, "\n", "\r\n> ") + "\r\n"))
	se.mu.Unlock()
	if _, err := io.WriteString(se.input, in); err != nil {
		rec.exited(ExecResult{}, errSessionEnded)
		return SessionExecResult{}, errSessionEnded
	}
	out, code, err := se.await(ctx, n, timeout)
	res := SessionExecResult{ExitCode: code}
	if errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
		io.WriteString(se.input, "\x03") // ^C: SIGINT to the command
		out, code, err = se.await(ctx, n, 5*time.Second)
		res.ExitCode = code
	}
	res.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		err = fmt.Errorf("%w: session %s: %v (output so far %q)", ErrConflict, sid, err, tail(out, 200))
	}
	se.rec.flush()
	rec.exited(ExecResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, DurationMS: res.DurationMS}, err)
	if err != nil {
		return res, err
	}
	if len(out) > OutputCap {
		out, res.Truncated = out[:OutputCap], true
	}
	res.Output = string(bytes.ToValidUTF8(out, []byte("\uFFFD")))
	return res, nil
}

func (se *session) info() SessionInfo {
	state := "ready"
	if se.busy.Load() {
		state = "busy"
	}
	se.mu.Lock()
	if se.ended {
		state = "ended"
	}
	size := se.size
	se.mu.Unlock()
	return SessionInfo{ID: se.id, Shell: se.shell, Mode: se.mode, State: state, Cols: size.Cols, Rows: size.Rows,
		Attached: int(se.attached.Load()), CreatedAt: se.created}
}

// forgetEnded drops the sessions whose shells have ended, to make room.
// t.mu is held.
func (t *workload) forgetEnded() {
	for id, se := range t.sessions {
		se.mu.Lock()
		ended := se.ended
		se.mu.Unlock()
		if ended {
			delete(t.sessions, id)
		}
	}
}

// session finds a caller's session.
func (s *Service) session(ctx context.Context, c Caller, id, sid string) (*session, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if se := t.sessions[sid]; se != nil {
			return se, nil
		}
	}
	return nil, fmt.Errorf("%w: no session %s in sandbox %s", ErrNotFound, sid, id)
}

// ListSessions returns a sandbox's sessions.
func (s *Service) ListSessions(ctx context.Context, c Caller, id string) ([]SessionInfo, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	out := []SessionInfo{}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, se := range t.sessions {
			out = append(out, se.info())
		}
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// DeleteSession ends a session's shell (hanging up its terminal).
func (s *Service) DeleteSession(ctx context.Context, c Caller, id, sid string) error {
	se, err := s.session(ctx, c, id, sid)
	if err != nil {
		return err
	}
	if t := s.workload(id, false); t != nil {
		t.mu.Lock()
		delete(t.sessions, sid)
		t.mu.Unlock()
	}
	se.tty.Finish(ended{ExecResult{}, fmt.Errorf("%w: session %s was deleted", ErrNotFound, sid), s.now()})
	se.close()
	return nil
}

// close ends the shell and everything it started: dropping its agent
// connection makes the agent kill the whole tree.
func (se *session) close() {
	se.input.Close()
	se.cancel()
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
