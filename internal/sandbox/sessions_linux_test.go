package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func TestSessions(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()
	ses, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string, timeoutS int64) sandbox.SessionExecResult {
		t.Helper()
		res, err := svc.SessionExec(ctx, c, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: cmd, TimeoutS: timeoutS})
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		return res
	}
	for _, tc := range []struct {
		cmd, out string
		code     int
	}{
		// State persists from call to call.
		{"cd /tmp && export A=1 && f(){ echo fn; } && alias hi='echo hello'", "", 0},
		{"pwd; echo $A; f; hi", "/tmp\n1\nfn\nhello\n", 0},
		{"python3 -m venv --without-pip /tmp/venv && . /tmp/venv/bin/activate", "", 0},
		{"echo $VIRTUAL_ENV; command -v python3", "/tmp/venv\n/tmp/venv/bin/python3\n", 0},
		// Exact exit codes, stderr on the terminal too.
		{"(exit 42)", "", 42},
		{"echo out; echo err >&2; false", "out\nerr\n", 1},
		// A fake end marker does not end the call.
		{`printf '\036AIRLOCK-0123456789abcdef01234567-0\037\n'; echo after`, "\x1eAIRLOCK-0123456789abcdef01234567-0\x1f\nafter\n", 0},
		// Multi-line commands, quotes and a line longer than the terminal's
		// line buffer.
		{"for i in 1 2; do\n  echo \"i=$i\"\ndone", "i=1\ni=2\n", 0},
		{"x=" + strings.Repeat("a", 5000) + "; echo ${#x}", "5000\n", 0},
	} {
		res := run(tc.cmd, 20)
		if res.Output != tc.out || res.ExitCode != tc.code || res.TimedOut {
			t.Errorf("%.60q: %+v, want output %q exit %d", tc.cmd, res, tc.out, tc.code)
		}
	}
	// A command waiting on stdin times out (SIGINT), and the session goes on.
	if res := run("read line; echo got:$line", 1); !res.TimedOut {
		t.Errorf("read from the terminal: %+v, want timed out", res)
	}
	if res := run("echo $A; pwd", 10); res.Output != "1\n/tmp\n" {
		t.Errorf("after the timeout: %+v", res)
	}
	// One command at a time; another tenant sees nothing.
	var wg sync.WaitGroup
	var slowErr error
	wg.Go(func() {
		_, slowErr = svc.SessionExec(ctx, c, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: "sleep 2", TimeoutS: 10})
	})
	// Once the list says busy, a second command is refused.
	for range 500 {
		if l, _ := svc.ListSessions(ctx, c, sb.ID); len(l) == 1 && l[0].State == "busy" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, busy := svc.SessionExec(ctx, c, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: "true"})
	wg.Wait()
	if slowErr != nil {
		t.Fatalf("the slow command: %v", slowErr)
	}
	if !errors.Is(busy, sandbox.ErrConflict) {
		t.Errorf("a second command while one runs: %v", busy)
	}
	other := tenant(t, 0, 0)
	if _, err := svc.SessionExec(ctx, other, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: "true"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("other tenant: %v", err)
	}
	list, err := svc.ListSessions(ctx, c, sb.ID)
	if err != nil || len(list) != 1 || list[0].ID != ses.ID || list[0].State != "ready" {
		t.Errorf("list: %+v, %v", list, err)
	}
	if err := svc.DeleteSession(ctx, c, sb.ID, ses.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SessionExec(ctx, c, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: "true"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("exec in a deleted session: %v", err)
	}
}

// TestSessionsConcurrent: many sessions in several sandboxes at once, no
// cross-talk.
func TestSessionsConcurrent(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 3 {
		sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
		for j := range 4 {
			wg.Go(func() {
				ses, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{})
				if err != nil {
					t.Error(err)
					return
				}
				me := strings.Repeat("x", i*4+j+1)
				for k := range 5 {
					res, err := svc.SessionExec(ctx, c, sb.ID, ses.ID, sandbox.SessionExecRequest{Command: "M=" + me + "; sleep 0.0$RANDOM; echo $M"})
					if err != nil || res.Output != me+"\n" {
						t.Errorf("session %d/%d call %d: %+v, %v", i, j, k, res, err)
					}
				}
			})
		}
	}
	wg.Wait()
}
