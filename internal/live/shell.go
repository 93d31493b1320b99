package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

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

// Shell is the command line of a session's shell in mode: ErrInvalid for
// a mode or shell there is none of.
func Shell(mode, shell string) ([]string, error) {
	argv, ok := shells[mode][shell]
	if !ok {
		if shells[mode] == nil {
			return nil, fmt.Errorf("%w: mode %q: want %q or %q", errdefs.ErrInvalid, mode, SessionModeExec, SessionModeInteractive)
		}
		return nil, fmt.Errorf("%w: shell %q: only bash is supported", errdefs.ErrInvalid, shell)
	}
	return argv, nil
}

// ValidSize checks a terminal size.
func ValidSize(cols, rows uint16) error {
	if cols < 1 || cols > 1000 || rows < 1 || rows > 1000 {
		return fmt.Errorf("%w: terminal size %dx%d: want 1 to 1000 columns and rows", errdefs.ErrInvalid, cols, rows)
	}
	return nil
}

func nonce() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// setupMarker matches the marker the setup of a shell with nonce n ends
// with.
func setupMarker(n string) *regexp.Regexp {
	return regexp.MustCompile("\x1eAIRLOCK-" + n + "-[0-9]+\x1f\n?")
}

// execSession starts se's shell as an exec of this daemon's.
func (w *Work) execSession(ctx context.Context, sb runtime.Sandbox, se *Session, rreq runtime.ExecRequest) error {
	pr, pw := io.Pipe()
	rreq.Stdin, rreq.Stdout = pr, shellOutput{se}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := sb.Start(pctx, rreq)
	if err != nil {
		cancel()
		pw.Close()
		return err
	}
	se.sh = &execShell{proc: proc, in: pw, cancel: cancel}
	done := make(chan struct{})
	se.set(nil, done) // se.close kills the shell; this records its end
	go func() {
		defer close(done)
		st, err := proc.Wait()
		pr.Close()
		w.finishSession(se, st, err)
	}()
	return nil
}

// awaitSetup waits until the shell has run its setup.
func (se *Session) awaitSetup(ctx context.Context, timeout time.Duration) error {
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

var errSessionEnded = fmt.Errorf("%w: the session's shell has ended", errdefs.ErrConflict)
