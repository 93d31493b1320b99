package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestBackgroundOverHTTP: a process printing a line a fifth of a second;
// the client drops its stream, resumes from its offset and gets every line
// exactly once; stdin and signals reach a process; destroying the sandbox
// ends an open stream with an error event at once.
func TestBackgroundOverHTTP(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	p := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "for i in $(seq 1 8); do echo line$i; sleep 0.2; done"}, "ticker"))
	if p.Pid < 1 || p.Tag != "ticker" {
		t.Fatalf("started %+v", p)
	}
	// Follow for a while, then drop the connection.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	var first bytes.Buffer
	next, _, _, err := c.ProcessOutput(short, sb.ID, p.Pid, 0, true, &first, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || first.Len() == 0 {
		t.Fatalf("first stream: %q, %v", first.String(), err)
	}
	var rest bytes.Buffer
	_, exit, dropped, err := c.ProcessOutput(ctx, sb.ID, p.Pid, next, true, &rest, nil)
	if err != nil || exit == nil || exit.ExitCode != 0 || dropped != 0 {
		t.Fatalf("resumed stream: exit %+v, dropped %d, %v", exit, dropped, err)
	}
	want := ""
	for i := 1; i <= 8; i++ {
		want += "line" + string(rune('0'+i)) + "\n"
	}
	if got := first.String() + rest.String(); got != want {
		t.Errorf("across the reconnect: %q, want %q", got, want)
	}

	echo := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "trap 'echo usr1' USR1; read l; echo got:$l; while :; do sleep 30 & wait; done"}, ""))
	if err := c.WriteStdin(ctx, sb.ID, echo.Pid, strings.NewReader("hi\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, sb.ID, echo.Pid, "got:hi\n")
	if err := c.SignalProcess(ctx, sb.ID, echo.Pid, "USR1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, sb.ID, echo.Pid, "usr1\n")
	if err := c.SignalProcess(ctx, sb.ID, echo.Pid, "NOSUCH"); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("bad signal name: %v", err)
	}
	list := must[[]client.Process](t)(c.ListProcesses(ctx, sb.ID))
	if len(list) != 2 || list[0].State != "exited" || list[1].State != "running" {
		t.Errorf("processes: %+v", list)
	}

	done := make(chan error, 1)
	go func() {
		_, _, _, err := c.ProcessOutput(ctx, sb.ID, echo.Pid, 0, true, nil, nil)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ae *client.Error
		if !errors.As(err, &ae) {
			t.Errorf("stream ended with %v, want an error event", err)
		}
		if d := time.Since(start); d > time.Second+500*time.Millisecond {
			t.Errorf("the stream ended %v after the delete", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream still runs after the sandbox was destroyed")
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

// waitFor follows a process's output until it holds want.
func waitFor(t *testing.T, c *client.Client, id string, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var out bytes.Buffer
		c.ProcessOutput(ctx, id, pid, 0, false, &out, nil)
		if strings.Contains(out.String(), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d never printed %q", pid, want)
}

// TestStreamBoundedMemory: 200 MB of output streams through the API while
// the daemon's resident memory stays bounded.
func TestStreamBoundedMemory(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	before := rssKB(t, s.cmd.Process.Pid, "VmRSS")
	var n countWriter
	res := must[client.ExecResult](t)(c.ExecStream(ctx, sb.ID, client.ExecRequest{Command: "head -c 200000000 /dev/zero"}, &n, nil))
	if res.ExitCode != 0 || n != 200_000_000 {
		t.Fatalf("streamed %d bytes, exit %d", n, res.ExitCode)
	}
	// The peak over the whole run, not a sample: nothing grew with the
	// output.
	peak := rssKB(t, s.cmd.Process.Pid, "VmHWM")
	t.Logf("daemon RSS before %d KiB, peak %d KiB", before, peak)
	if peak-before > 64<<10 {
		t.Errorf("daemon peak RSS %d KiB, %d KiB above the %d KiB before streaming", peak, peak-before, before)
	}
}

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// rssKB reads a memory field (VmRSS, VmHWM) of a process in KiB.
func rssKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	kb, err := statusKB(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// statusKB reads a memory field (VmRSS, VmHWM) of a process in KiB.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// TestSessionOverHTTP: a session's state persists between calls through
// the API, and destroying the sandbox ends it.
func TestSessionOverHTTP(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	ses := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{}))
	must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "cd /tmp && export A=1", 0))
	res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "echo $PWD $A; exit_code() { return 7; }; exit_code", 0))
	if res.Output != "/tmp 1\n" || res.ExitCode != 7 {
		t.Errorf("second call: %+v", res)
	}
	res = must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "cat", time.Second))
	if !res.TimedOut {
		t.Errorf("cat waiting on the terminal: %+v", res)
	}
	if res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "echo still $A", 0)); res.Output != "still 1\n" {
		t.Errorf("after the timeout: %+v", res)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SessionExec(ctx, sb.ID, ses.ID, "true", 0); err == nil {
		t.Errorf("exec in a session of a destroyed sandbox succeeded")
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

// TestExecStreamEndsOnDestroy: a foreground exec streaming over SSE ends
// with an error event, not an ordinary exit or silence, when its sandbox
// is destroyed.
func TestExecStreamEndsOnDestroy(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.ExecStream(ctx, sb.ID, client.ExecRequest{Command: "echo up; sleep 60"}, writerFunc(func(p []byte) {
			select {
			case <-started:
			default:
				close(started)
			}
		}), nil)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the command never started")
	}
	start := time.Now()
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ae *client.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, "destroyed while the command ran") {
			t.Errorf("stream ended with %v, want an error event saying the sandbox was destroyed", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the stream ended %v after the delete", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream still runs after the sandbox was destroyed")
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
