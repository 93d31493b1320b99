package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
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

// Session is one shell on a terminal, kept between requests. In exec
// mode commands run in the shell itself (eval in a function), so cd,
// variables, functions, aliases and an activated virtualenv persist. Each
// command's start and end are markers printed around it with a nonce drawn
// for that command only, so output that merely looks like a marker cannot
// end it early. Everything the terminal shows also goes to a bounded
// scrollback that attached clients read from. Where the sandbox's agent
// runs terminal jobs the shell is one (sessions_jobs.go), and outlives
// the daemon.
type Session struct {
	id      string
	shell   string
	mode    string
	created time.Time
	sh      shellIO
	setup   *regexp.Regexp  // exec mode: the setup's marker, until it is seen
	tty     *outBuf         // scrollback; finished when the shell ends or is lost
	marks   markFilter      // used only by feed's goroutine
	rec     SessionRecorder // its events, and the terminal's output, into the audit log

	run      sync.Mutex  // one command at a time
	busy     atomic.Bool // set while run is held, for info (which must not take run)
	attached atomic.Int32

	mu        sync.Mutex
	out       []byte // exec mode: output since the current command started
	live      bool   // the scrollback records (exec mode: once set up)
	running   string // exec mode: the nonce of the command the output shows running
	size      runtime.TTYSize
	ended     bool
	wake      chan struct{}
	following // what follows its shell and records its end
}

// newSession is a session whose shell is yet to be started.
func newSession(id, shell, mode string, created time.Time, size runtime.TTYSize) *Session {
	return &Session{id: id, shell: shell, mode: mode, created: created,
		tty: newOutBuf(ScrollbackCap), size: size, wake: make(chan struct{}),
		live: mode != SessionModeExec}
}

// Mode is the session's mode (SessionModeExec or SessionModeInteractive).
func (se *Session) Mode() string { return se.mode }

// CreateSession starts argv (Shell's) in mode on a terminal of size in
// sandbox id, as rreq says otherwise; rec records the session.
func (w *Work) CreateSession(ctx context.Context, id string, sb runtime.Sandbox, rreq runtime.ExecRequest, shell, mode string, size runtime.TTYSize, rec Recorder) (SessionInfo, error) {
	t := w.workload(id, true)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.sessions) >= MaxSessions {
		t.forgetEnded()
	}
	if len(t.sessions) >= MaxSessions {
		return SessionInfo{}, fmt.Errorf("%w: %d sessions are open in this sandbox", errdefs.ErrLimitExceeded, MaxSessions)
	}
	se := newSession("ses-"+nonce()[:16], shell, mode, w.host.Now(), size)
	var setup string
	if se.mode == SessionModeExec {
		setup = nonce()
		se.setup = setupMarker(setup)
	}
	se.rec = rec.Session(se.id)
	rreq.TTY = &size
	err := errors.ErrUnsupported
	if jr, ok := sb.(runtime.JobRunner); ok {
		err = w.spawnSession(ctx, sb, jr, se, setup, rreq)
	}
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, runtime.ErrUnsupported) {
		// An agent without terminal jobs (started by an older binary):
		// the shell lives as long as this daemon's connection to it.
		err = w.execSession(ctx, sb, se, rreq)
	}
	if err != nil {
		return SessionInfo{}, w.host.ExecError(ctx, id, err)
	}
	if se.mode == SessionModeInteractive {
		se.rec.Created(se.info())
		t.sessions[se.id] = se
		return se.info(), nil
	}
	// Wait for the setup's own marker: the shell is ready, and whatever
	// it printed before (the echo of the first line) is dropped.
	if _, err := io.WriteString(se.sh, sessionSetup+setup+"\n"); err != nil {
		se.close()
		return SessionInfo{}, fmt.Errorf("%w: start session: %v", errdefs.ErrUnavailable, err)
	}
	if err := se.awaitSetup(ctx, 15*time.Second); err != nil {
		se.close()
		return SessionInfo{}, fmt.Errorf("%w: the shell did not start: %v", errdefs.ErrUnavailable, err)
	}
	se.rec.Created(se.info())
	t.sessions[se.id] = se
	return se.info(), nil
}

func (se *Session) info() SessionInfo {
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

// Session finds session sid of sandbox id.
func (w *Work) Session(id, sid string) (*Session, error) {
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if se := t.sessions[sid]; se != nil {
			return se, nil
		}
	}
	return nil, fmt.Errorf("%w: no session %s in sandbox %s", errdefs.ErrNotFound, sid, id)
}

// Sessions returns sandbox id's sessions, oldest first.
func (w *Work) Sessions(id string) []SessionInfo {
	out := []SessionInfo{}
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, se := range t.sessions {
			out = append(out, se.info())
		}
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// DeleteSession ends session sid's shell (hanging up its terminal).
func (w *Work) DeleteSession(id, sid string) error {
	se, err := w.Session(id, sid)
	if err != nil {
		return err
	}
	if t := w.workload(id, false); t != nil {
		t.mu.Lock()
		delete(t.sessions, sid)
		t.mu.Unlock()
	}
	se.tty.Finish(ended{ExecResult{}, fmt.Errorf("%w: session %s was deleted", errdefs.ErrNotFound, sid), w.host.Now()})
	se.close()
	return nil
}

// close ends the shell and everything it started.
func (se *Session) close() {
	if se.sh != nil {
		se.sh.Kill()
	}
}
