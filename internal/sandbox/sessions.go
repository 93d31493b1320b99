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
// command's start and end are markers printed around it with a nonce drawn
// for that command only, so output that merely looks like a marker cannot
// end it early. Everything the terminal shows also goes to a bounded
// scrollback that attached clients read from. Where the sandbox's agent
// runs terminal jobs the shell is one (sessions_jobs.go), and outlives
// the daemon.
type session struct {
	id      string
	shell   string
	mode    string
	created time.Time
	sh      shellIO
	setup   *regexp.Regexp // exec mode: the setup's marker, until it is seen
	tty     *outBuf        // scrollback; finished when the shell ends or is lost
	marks   markFilter     // used only by feed's goroutine
	rec     *outRecorder   // the terminal's output, into the audit log
	exited  chan struct{}  // closed once the shell's end is recorded

	run      sync.Mutex  // one command at a time
	busy     atomic.Bool // set while run is held, for info (which must not take run)
	attached atomic.Int32

	mu      sync.Mutex
	out     []byte // exec mode: output since the current command started
	live    bool   // the scrollback records (exec mode: once set up)
	running string // exec mode: the nonce of the command the output shows running
	size    runtime.TTYSize
	ended   bool
	wake    chan struct{}
	stop    context.CancelFunc // ends a shell job's follower
}

// shellIO is how a session reaches its shell.
type shellIO interface {
	io.Writer // typed into its terminal
	Resize(size runtime.TTYSize) error
	// Kill ends the shell and everything it started.
	Kill()
}

// execShell is a shell run as an exec, for an agent without terminal
// jobs: dropping the exec's connection kills the shell's tree.
type execShell struct {
	proc   runtime.Process
	in     *io.PipeWriter
	cancel context.CancelFunc
}

func (e *execShell) Write(p []byte) (int, error) { return e.in.Write(p) }

func (e *execShell) Resize(size runtime.TTYSize) error {
	r, ok := e.proc.(runtime.Resizer)
	if !ok {
		return errors.New("this shell's terminal cannot be resized")
	}
	return r.Resize(size)
}

func (e *execShell) Kill() {
	e.in.Close()
	e.cancel()
}

func (se *session) Write(p []byte) (int, error) {
	se.feed(p, 0, false, true)
	return len(p), nil
}

// feed takes output of the shell's terminal: for an exec-mode shell, first
// the setup's, which nobody sees. With tracked, end is the offset in the
// shell job's output after p; record says whether p goes into the audit
// log (what an earlier daemon recorded does not again).
func (se *session) feed(p []byte, end int64, tracked, record bool) {
	se.mu.Lock()
	defer se.mu.Unlock()
	defer func() {
		close(se.wake)
		se.wake = make(chan struct{})
	}()
	exec := se.mode == SessionModeExec
	if exec && !se.live {
		se.out = append(se.out, p...)
		m := se.setup.FindIndex(se.out)
		if m == nil {
			if len(se.out) > OutputCap {
				se.out = append(se.out[:0], se.out[len(se.out)-OutputCap/2:]...)
			}
			return
		}
		p = bytes.Clone(se.out[m[1]:])
		se.out = se.out[:0]
		se.live = true
	}
	// Shown (and recorded) before a waiting command learns of its end
	// marker, so its output is in the log before its exit.
	if se.live {
		shown := p
		if exec {
			var marks []string
			shown, marks = se.marks.filter(p)
			for _, m := range marks {
				n, rc, _ := strings.Cut(m, "-")
				switch {
				case rc == "":
					se.running = n // the runner printed its start
				case n == se.running:
					se.running = ""
				}
			}
		}
		se.tty.Write("tty", shown)
		if record && tracked {
			se.rec.writeTo(shown, end)
		} else if record {
			se.rec.Write(shown)
		}
	}
	if exec {
		// Bounded: a command's output past OutputCap is dropped (and said
		// so) but the tail is kept so the end marker is still found.
		se.out = append(se.out, p...)
		if len(se.out) > 2*OutputCap {
			se.out = append(se.out[:OutputCap:OutputCap], se.out[len(se.out)-OutputCap:]...)
		}
	}
}

func (se *session) end() {
	se.mu.Lock()
	defer se.mu.Unlock()
	se.ended = true
	close(se.wake)
	se.wake = make(chan struct{})
}

// finish records how the shell ended (st, or err when it was lost).
func (s *Service) finishSession(se *session, r auditor, st runtime.ExitStatus, err error) {
	defer close(se.exited)
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
		return
	}
	r.record(audit.SessionEnded, map[string]any{"session_id": se.id, "exit_code": st.Code, "signal": st.Signal})
	se.tty.Finish(ended{execResult(st), nil, s.now()})
}

// sessionSetup makes the shell quiet and machine-readable: no echo, no
// CR before LF, no line editing (a tab in a command is a tab), empty
// prompts, a runner that shows the command (as if typed: the terminal's
// output is then all the shell's, the same for any daemon that follows
// it) and prints its start marker before running it, and
// a prompt hook that prints the end marker with the last command's
// status (a daemon that re-attaches to the shell learns from them whether
// a command is running). The shell stays interactive so that ^C interrupts the
// command (a builtin read included), never the shell. The hook and the
// runner are read-only, so a command cannot switch the markers off.
const sessionSetup = `stty -echo -onlcr -icanon 2>/dev/null; set +o history; unset HISTFILE; PS1=''; PS2=''
__airlock_mark() { local rc=$?; printf '\036AIRLOCK-%s-%d\037\n' "$__airlock_n" "$rc"; PS1=''; PS2=''; }
__airlock_run() { __airlock_n=$1; local c; c=$(cat); printf '$ %s\n' "${c//$'\n'/$'\n> '}"; printf '\036AIRLOCK-%s\037\n' "$1"; eval "$c" </dev/tty; }
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
	se := &session{id: "ses-" + nonce()[:16], shell: req.Shell, mode: req.Mode, created: s.now(),
		tty: newOutBuf(ScrollbackCap), size: runtime.TTYSize{Cols: req.Cols, Rows: req.Rows}, wake: make(chan struct{}),
		live: req.Mode == SessionModeInteractive, exited: make(chan struct{})}
	var setup string
	if se.mode == SessionModeExec {
		setup = nonce()
		se.setup = setupMarker(setup)
	}
	r := s.auditor(c, id, c.TenantID)
	se.rec = r.outRecorder(audit.SessionOutput, s.scrubber(id), map[string]any{"session_id": se.id})
	size := se.size
	rreq.TTY = &size
	err = errors.ErrUnsupported
	if jr, ok := sb.(runtime.JobRunner); ok {
		err = s.spawnSession(ctx, sb, jr, se, r, setup, rreq)
	}
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, runtime.ErrUnsupported) {
		// An agent without terminal jobs (started by an older binary):
		// the shell lives as long as this daemon's connection to it.
		err = s.execSession(ctx, sb, se, r, rreq)
	}
	if err != nil {
		return SessionInfo{}, s.execError(ctx, id, err)
	}
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
	if _, err := io.WriteString(se.sh, sessionSetup+setup+"\n"); err != nil {
		se.close()
		return SessionInfo{}, fmt.Errorf("%w: start session: %v", ErrUnavailable, err)
	}
	if err := se.awaitSetup(ctx, 15*time.Second); err != nil {
		se.close()
		return SessionInfo{}, fmt.Errorf("%w: the shell did not start: %v", ErrUnavailable, err)
	}
	created()
	t.sessions[se.id] = se
	return se.info(), nil
}

// setupMarker matches the marker the setup of a shell with nonce n ends
// with.
func setupMarker(n string) *regexp.Regexp {
	return regexp.MustCompile("\x1eAIRLOCK-" + n + "-[0-9]+\x1f\n?")
}

// execSession starts se's shell as an exec of this daemon's.
func (s *Service) execSession(ctx context.Context, sb runtime.Sandbox, se *session, r auditor, rreq runtime.ExecRequest) error {
	pr, pw := io.Pipe()
	rreq.Stdin, rreq.Stdout = pr, se
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := sb.Start(pctx, rreq)
	if err != nil {
		cancel()
		pw.Close()
		return err
	}
	se.sh = &execShell{proc: proc, in: pw, cancel: cancel}
	go func() {
		st, err := proc.Wait()
		pr.Close()
		s.finishSession(se, r, st, err)
	}()
	return nil
}

// awaitSetup waits until the shell has run its setup.
func (se *session) awaitSetup(ctx context.Context, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		se.mu.Lock()
		live, ended, wake := se.live, se.ended, se.wake
		se.mu.Unlock()
		switch {
		case live:
			return nil
		case ended:
			return errSessionEnded
		}
		select {
		case <-wake:
		case <-timer.C:
			return context.DeadlineExceeded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
			before := out[:m[0]]
			if i := bytes.Index(before, []byte(markPrefix+n+"\x1f")); i >= 0 {
				before = bytes.TrimPrefix(before[i+len(markPrefix)+len(n)+1:], []byte("\n"))
			}
			return bytes.Clone(before), code, nil
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
	se.mu.Lock()
	running := se.running
	se.mu.Unlock()
	if running != "" {
		// Started before a restart of the daemon, or not over after its
		// timeout's ^C: what is typed now would be its input.
		return SessionExecResult{}, fmt.Errorf("%w: session %s is still running an earlier command", ErrConflict, sid)
	}
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
	if _, err := io.WriteString(se.sh, in); err != nil {
		rec.exited(ExecResult{}, errSessionEnded)
		return SessionExecResult{}, errSessionEnded
	}
	out, code, err := se.await(ctx, n, timeout)
	res := SessionExecResult{ExitCode: code}
	if errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
		io.WriteString(se.sh, "\x03") // ^C: SIGINT to the command
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
	se.mu.Lock()
	if se.busy.Load() || se.running != "" {
		state = "busy"
	}
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

// close ends the shell and everything it started.
func (se *session) close() {
	if se.sh != nil {
		se.sh.Kill()
	}
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
