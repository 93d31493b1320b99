package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// SessionExecResult is what one command in a session did.
type SessionExecResult struct {
	ExitCode   int     `json:"exit_code"`
	Output     string  `json:"output"` // stdout and stderr as the terminal showed them
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	Truncated  bool    `json:"truncated"`
}

// await waits for the marker with nonce n in the output, and returns what
// came before it and the status it carries.
func (se *Session) await(ctx context.Context, n string, timeout time.Duration) ([]byte, int, error) {
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

// SessionExec runs command in se, a session of sandbox id, and returns
// once it ends. On timeout the command gets SIGINT (as ^C would send), and
// the session goes on. begin records the command's start, once the shell
// takes it, and returns the recorder of its end.
func (w *Work) SessionExec(ctx context.Context, id string, se *Session, command string, timeout time.Duration, begin func() CommandRecorder) (SessionExecResult, error) {
	sid := se.id
	if se.mode != SessionModeExec {
		return SessionExecResult{}, fmt.Errorf("%w: session %s is interactive: attach to it to type; exec runs in sessions created with mode %q", errdefs.ErrConflict, sid, SessionModeExec)
	}
	if !se.run.TryLock() {
		return SessionExecResult{}, fmt.Errorf("%w: session %s is running a command", errdefs.ErrConflict, sid)
	}
	defer se.run.Unlock()
	se.mu.Lock()
	running := se.running
	se.mu.Unlock()
	if running != "" {
		// Started before a restart of the daemon, or not over after its
		// timeout's ^C: what is typed now would be its input.
		return SessionExecResult{}, fmt.Errorf("%w: session %s is still running an earlier command", errdefs.ErrConflict, sid)
	}
	se.busy.Store(true)
	defer se.busy.Store(false)
	defer w.host.Hold(id)()
	n := nonce()
	se.mu.Lock()
	se.out = se.out[:0]
	se.mu.Unlock()
	start := time.Now()
	// The command goes in as a here-document the runner reads whole: its
	// text is never parsed line by line by the shell's own input, and the
	// delimiter carries this command's nonce, which its text cannot hold.
	in := fmt.Sprintf("__airlock_run %s <<'AIRLOCK_EOF_%s'\n%s\nAIRLOCK_EOF_%s\n", n, n, command, n)
	rec := begin()
	if _, err := io.WriteString(se.sh, in); err != nil {
		rec.Exited(ExecResult{}, errSessionEnded)
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
		err = fmt.Errorf("%w: session %s: %v (output so far %q)", errdefs.ErrConflict, sid, err, tail(out, 200))
	}
	se.rec.Flush()
	rec.Exited(ExecResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, DurationMS: res.DurationMS}, err)
	if err != nil {
		return res, err
	}
	if len(out) > OutputCap {
		out, res.Truncated = out[:OutputCap], true
	}
	res.Output = string(bytes.ToValidUTF8(out, []byte("\uFFFD")))
	return res, nil
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
