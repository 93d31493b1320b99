package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func TestExec(t *testing.T) { testExec(t, newService(t)) }

// testExec checks what a command run to its end gives: exit code, output,
// stdin, env, cwd, signal and timeout.
func testExec(t *testing.T, svc *sandbox.Service) {
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  sandbox.ExecRequest
		want sandbox.ExecResult
	}{
		{"argv", sandbox.ExecRequest{Cmd: []string{"printf", "%s|", "a b", "c"}}, sandbox.ExecResult{Stdout: "a b|c|"}},
		{"shell with exit code", sandbox.ExecRequest{Command: "echo out; echo err >&2; exit 3"},
			sandbox.ExecResult{ExitCode: 3, Stdout: "out\n", Stderr: "err\n"}},
		{"stdin", sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: "fed in"}, sandbox.ExecResult{Stdout: "fed in"}},
		{"env", sandbox.ExecRequest{Command: "echo $X", Env: map[string]string{"X": "y"}}, sandbox.ExecResult{Stdout: "y\n"}},
		{"relative cwd", sandbox.ExecRequest{Command: "mkdir -p sub && cd sub && pwd"}, sandbox.ExecResult{Stdout: "/home/user/sub\n"}},
		{"invalid utf-8 replaced", sandbox.ExecRequest{Command: `printf 'a\377b'`}, sandbox.ExecResult{Stdout: "a\uFFFDb"}},
		{"killed by signal", sandbox.ExecRequest{Command: "kill -9 $$"}, sandbox.ExecResult{ExitCode: 137, Signal: 9}},
		{"timeout", sandbox.ExecRequest{Command: "sleep 30", TimeoutS: 1}, sandbox.ExecResult{ExitCode: 137, Signal: 9, TimedOut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := svc.Exec(ctx, c, sb.ID, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got.ExecID, "ex-") {
				t.Errorf("exec id %q", got.ExecID)
			}
			got.DurationMS, got.ExecID = 0, ""
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if res, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Cmd: []string{"pwd"}, Cwd: "sub"}); err != nil || res.Stdout != "/home/user/sub\n" {
		t.Errorf("cwd sub: %+v, %v", res, err)
	}
}

func TestExecRefusesBadRequests(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 60})
	for name, req := range map[string]sandbox.ExecRequest{
		"both cmd and command":      {Cmd: []string{"true"}, Command: "true"},
		"neither":                   {},
		"empty argv[0]":             {Cmd: []string{""}},
		"NUL in argument":           {Cmd: []string{"echo", "a\x00b"}},
		"bad env":                   {Command: "true", Env: map[string]string{"A=B": "c"}},
		"negative timeout":          {Command: "true", TimeoutS: -1},
		"overflowing timeout":       {Command: "true", TimeoutS: 1 << 62},
		"timeout past the sandbox":  {Command: "true", TimeoutS: 120},
		"missing program":           {Cmd: []string{"no-such-program"}},
		"cwd that is not there":     {Command: "true", Cwd: "/nowhere"},
		"relative missing cwd path": {Command: "true", Cwd: "nowhere"},
	} {
		_, err := svc.Exec(context.Background(), c, sb.ID, req)
		wantKind(t, name, err, sandbox.ErrInvalid)
	}
	if res := run(t, svc, c, sb.ID, "echo still fine"); res.Stdout != "still fine\n" {
		t.Errorf("after bad requests: %+v", res)
	}
}

// TestExecTruncates: 2 MiB of output comes back as the first OutputCap
// bytes, flagged, and the process still ran to its end (its last line
// went to stderr after all of stdout).
func TestExecTruncates(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	res := run(t, svc, c, sb.ID, `head -c 2097152 /dev/zero | tr '\0' a; echo done >&2`)
	if len(res.Stdout) != sandbox.OutputCap || strings.Trim(res.Stdout, "a") != "" || !res.Truncated {
		t.Errorf("stdout %d bytes, truncated %v; want %d bytes of 'a', truncated", len(res.Stdout), res.Truncated, sandbox.OutputCap)
	}
	if res.Stderr != "done\n" || res.ExitCode != 0 {
		t.Errorf("the process did not run to its end: %+v", res.Stderr)
	}
	if !utf8.ValidString(res.Stdout) {
		t.Error("stdout is not UTF-8")
	}
}

// recorder is a Stream that keeps its events.
type recorder struct {
	mu     sync.Mutex
	events []string
	fail   error         // returned from Stdout when set
	slow   time.Duration // Started takes this long, as a slow client would
}

func (r *recorder) add(kind string, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, kind+":"+string(p))
}

func (r *recorder) Started(pid int, _ string) error {
	time.Sleep(r.slow)
	if pid <= 0 {
		r.add("bad-pid", nil)
	}
	r.add("started", nil)
	return nil
}

func (r *recorder) Stdout(p []byte) error {
	r.add("stdout", p)
	return r.fail
}

func (r *recorder) Stderr(p []byte) error { r.add("stderr", p); return nil }

func TestExecStream(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	// The output starts at once and Started is slow, so the first chunk is
	// there before the pid has been sent: it must wait. The sleeps in the
	// script only keep the two pipes' chunks from merging or swapping.
	rec := &recorder{slow: 200 * time.Millisecond}
	res, err := svc.ExecStream(context.Background(), c, sb.ID,
		sandbox.ExecRequest{Command: "echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 4"}, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"started:", "stdout:one\n", "stderr:two\n", "stdout:three\n"}
	if strings.Join(rec.events, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", rec.events, want)
	}
	if res.ExitCode != 4 || res.Stdout != "" || res.Stderr != "" {
		t.Errorf("result %+v", res)
	}
}

// TestExecStreamClientGone: when the stream cannot take output (the client
// went away), the process is killed and ExecStream returns instead of
// running the endless loop to the sandbox's expiry.
func TestExecStreamClientGone(t *testing.T) { testExecClientGone(t, newService(t)) }

func testExecClientGone(t *testing.T, svc *sandbox.Service) {
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	gone := errors.New("client gone")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := svc.ExecStream(ctx, c, sb.ID, sandbox.ExecRequest{Command: "while :; do echo spam; done"}, &recorder{fail: gone})
	if ctx.Err() != nil {
		t.Fatal("ExecStream kept running after the stream failed")
	}
	if !errors.Is(err, gone) {
		t.Errorf("ExecStream returned %v, want the stream's error", err)
	}
	// The kill is the agent's, after the connection drops: poll for it.
	waitGone(t, svc, c, sb.ID, "[w]hile :", "the spamming shell")
}

// waitGone waits until no process in sandbox id has a command line that
// matches pattern (a grep pattern that does not match itself).
func waitGone(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id, pattern, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res := run(t, svc, c, id, `cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c '`+pattern+`' || true`)
		if strings.TrimSpace(res.Stdout) == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s survived: %q running", what, res.Stdout)
		}
	}
}

// TestExecCancelKills: a command whose request is cancelled (its client
// gone) is killed, not left to run.
func TestExecCancelKills(t *testing.T) { testExecCancel(t, newService(t)) }

func testExecCancel(t *testing.T, svc *sandbox.Service) {
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	start := time.Now()
	res, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Cmd: []string{"sleep", "301"}})
	if err == nil {
		t.Fatalf("exec of a cancelled request: %+v, no error", res)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("exec returned %v after its request was cancelled", took)
	}
	waitGone(t, svc, c, sb.ID, "[s]leep 301", "the cancelled command")
}
