package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// A template's start command (runtime.TemplateStart) runs once in each
// sandbox made from the template, as one of its background processes
// (tagged live.StartTag), started by create before the sandbox is
// handed out. The agent owns it like any background process: a restart
// of the daemon adopts it, never starts it again. Templates without one
// (base, and so the warm pool) cost nothing: their info is not even read.

// maxStartCommand bounds a start or ready command's length.
const maxStartCommand = 16 << 10

// startTailBytes is how much of a failed start command's output its
// error quotes.
const startTailBytes = 2048

// validStart refuses a start command no sandbox could run. An empty
// command with nothing else set means none.
func validStart(st *runtime.TemplateStart) error {
	switch {
	case st == nil || *st == runtime.TemplateStart{}:
		return nil
	case strings.TrimSpace(st.Command) == "":
		return fmt.Errorf("%w: start: a command is needed for ready_port, ready_command or ready_timeout_s", ErrInvalid)
	case len(st.Command) > maxStartCommand || len(st.ReadyCommand) > maxStartCommand:
		return fmt.Errorf("%w: start: commands are at most %d bytes", ErrInvalid, maxStartCommand)
	case strings.IndexByte(st.Command, 0) >= 0 || strings.IndexByte(st.ReadyCommand, 0) >= 0:
		return fmt.Errorf("%w: start: NUL byte in a command", ErrInvalid)
	case st.ReadyPort < 0 || st.ReadyPort > 65535:
		return fmt.Errorf("%w: start: ready_port %d: want 1 to 65535 (0: none)", ErrInvalid, st.ReadyPort)
	case st.ReadyPort == egress.HTTPPort || st.ReadyPort == egress.SOCKSPort:
		return fmt.Errorf("%w: start: ready_port %d is the sandbox's egress proxy", ErrInvalid, st.ReadyPort)
	case st.ReadyTimeoutS < 0 || time.Duration(st.ReadyTimeoutS)*time.Second > runtime.MaxReadyTimeout:
		return fmt.Errorf("%w: start: ready_timeout_s %d: want 1 to %d (0: %d)", ErrInvalid, st.ReadyTimeoutS,
			int(runtime.MaxReadyTimeout/time.Second), int(runtime.DefaultReadyTimeout/time.Second))
	}
	return nil
}

// orNone is st, or nil for the empty start command that means none.
func orNone(st *runtime.TemplateStart) *runtime.TemplateStart {
	if st == nil || st.Command == "" {
		return nil
	}
	return st
}

// templateStart is the start command of rec's template, nil for none
// (base, a build sandbox, a template without one).
func (s *Service) templateStart(ctx context.Context, rec sandboxrec.Sandbox, build bool) (*runtime.TemplateStart, error) {
	if build || rec.Template == "" || rec.Template == "base" {
		return nil, nil
	}
	t, err := s.Template(ctx, rec.Template)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", rec.Template, err)
	}
	return orNone(t.Start), nil
}

// runStart starts rec's template's start command in sb and waits until it
// is ready. On an error the caller destroys the sandbox.
func (s *Service) runStart(ctx context.Context, c Caller, rec sandboxrec.Sandbox, sb runtime.Sandbox, st *runtime.TemplateStart) error {
	req := ExecRequest{Command: st.Command, Tag: live.StartTag}
	// No timeout: it ends with its sandbox, whose lifetime may be
	// extended.
	rreq := runtime.ExecRequest{Shell: st.Command, Env: s.execEnv(rec.ID, nil)}
	info, err := s.work.StartBackground(ctx, rec.ID, sb, rreq, live.StartTag, st.Command, func() live.CommandRecorder {
		return s.recordExec(c, rec.ID, req, true, "")
	})
	if err != nil {
		return fmt.Errorf("template %s: start command: %w", rec.Template, err)
	}
	p, err := s.work.Proc(rec.ID, info.Pid)
	if err != nil {
		return fmt.Errorf("template %s: start command: %w", rec.Template, err)
	}
	timeout := runtime.DefaultReadyTimeout
	if st.ReadyTimeoutS > 0 {
		timeout = time.Duration(st.ReadyTimeoutS) * time.Second
	}
	deadline := time.Now().Add(timeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		if pi := p.Info(); pi.State != "running" {
			return fmt.Errorf("template %s: start command %s before it was ready%s", rec.Template, endedHow(pi), s.startTail(ctx, rec.ID, p))
		}
		ready, why, err := startReady(ctx, sb, st, rreq.Env, time.Until(deadline))
		if err != nil {
			return fmt.Errorf("template %s: start command: %w", rec.Template, err)
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("template %s: start command not ready after %s: %s%s", rec.Template, timeout, why, s.startTail(ctx, rec.ID, p))
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// startReady checks st's readiness conditions once; why says what is not
// ready yet. An error is a sandbox that is gone.
func startReady(ctx context.Context, sb runtime.Sandbox, st *runtime.TemplateStart, env map[string]string, left time.Duration) (ready bool, why string, err error) {
	if st.ReadyPort > 0 {
		d, ok := sb.(runtime.Dialer)
		if !ok {
			return false, "", fmt.Errorf("%w: this runtime cannot connect into sandboxes for ready_port", runtime.ErrUnsupported)
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := d.Dial(dctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(st.ReadyPort)))
		cancel()
		if errors.Is(err, runtime.ErrNotFound) {
			return false, "", err
		}
		if err != nil {
			return false, fmt.Sprintf("nothing accepts connections on port %d", st.ReadyPort), nil
		}
		conn.Close()
	}
	if st.ReadyCommand != "" {
		res, err := sb.Exec(ctx, runtime.ExecRequest{Shell: st.ReadyCommand, Env: env, Timeout: max(min(left, 10*time.Second), time.Second)})
		if errors.Is(err, runtime.ErrNotFound) {
			return false, "", err
		}
		if err != nil || res.Code != 0 {
			return false, fmt.Sprintf("the ready command %s did not exit 0", clip(st.ReadyCommand)), nil
		}
	}
	return true, "", nil
}

func endedHow(pi ProcInfo) string {
	switch {
	case pi.Exit == nil:
		return "was lost"
	case pi.Exit.Signal != 0:
		return fmt.Sprintf("was killed by signal %d", pi.Exit.Signal)
	}
	return fmt.Sprintf("exited %d", pi.Exit.ExitCode)
}

// startTail is the end of what the start command wrote to stderr (stdout
// when it wrote nothing there), for its error.
func (s *Service) startTail(ctx context.Context, id string, p *live.Proc) string {
	var t tail
	if err := s.work.Output(ctx, id, p, 0, false, &t); err != nil && t.stderr == nil && t.stdout == nil {
		return ""
	}
	out, name := t.stderr, "stderr"
	if len(out) == 0 {
		out, name = t.stdout, "stdout"
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		return "; it wrote nothing"
	}
	return fmt.Sprintf("; its %s ends:\n%s", name, strings.ToValidUTF8(string(out), "\uFFFD"))
}

// tail keeps the last startTailBytes of each stream.
type tail struct{ stdout, stderr []byte }

func (t *tail) Output(stream string, _ int64, data []byte) error {
	b := &t.stdout
	if stream == "stderr" {
		b = &t.stderr
	}
	*b = append(*b, data...)
	if n := len(*b); n > startTailBytes {
		*b = append([]byte(nil), (*b)[n-startTailBytes:]...)
	}
	return nil
}
func (t *tail) Dropped(int64, int64) error        { return nil }
func (t *tail) Exit(live.ExecResult, int64) error { return nil }
func (t *tail) End(int64) error                   { return nil }

// startTemplate runs the start command of rec's template, if it has one,
// and waits for it to be ready.
func (s *Service) startTemplate(ctx context.Context, c Caller, rec sandboxrec.Sandbox, sb runtime.Sandbox, build bool) error {
	st, err := s.templateStart(ctx, rec, build)
	if err != nil || st == nil {
		return err
	}
	return s.runStart(ctx, c, rec, sb, st)
}

// errStartCut is why a sandbox whose create a restart of the daemon cut
// off before its template's start command was ready is failed: whether
// it started, or is ready, nobody knows, and its creator was told the
// create failed.
var errStartCut = errors.New("the create was cut off before its template's start command was ready")

// startCut says whether rec, left in creating by a daemon that stopped,
// has a start command that may not have run.
func (s *Service) startCut(ctx context.Context, rec sandboxrec.Sandbox) bool {
	if rec.State != sandboxrec.Creating {
		return false
	}
	st, err := s.templateStart(ctx, rec, false)
	return err == nil && st != nil
}
