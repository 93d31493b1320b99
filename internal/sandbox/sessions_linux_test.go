package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
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

// TestSessionsConcurrent: 50 sessions in 10 sandboxes, all running
// commands at once, each seeing only its own state (variables, cwd).
func TestSessionsConcurrent(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	const sandboxes, perSandbox, calls = 10, 5, 4
	sbs := createMany(t, svc, c, sandboxes, sandbox.CreateRequest{TimeoutS: 600, MemoryMB: 128})
	type ses struct {
		sb, id, me string
	}
	all := make([]ses, sandboxes*perSandbox)
	var wg sync.WaitGroup
	for i, sb := range sbs {
		for j := range perSandbox {
			wg.Go(func() {
				info, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{})
				if err != nil {
					t.Errorf("sandbox %d session %d: %v", i, j, err)
					return
				}
				all[i*perSandbox+j] = ses{sb: sb.ID, id: info.ID, me: fmt.Sprintf("s%d-%d", i, j)}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	start := make(chan struct{})
	for _, se := range all {
		wg.Go(func() {
			<-start
			exec := func(cmd string) string {
				res, err := svc.SessionExec(ctx, c, se.sb, se.id, sandbox.SessionExecRequest{Command: cmd, TimeoutS: 30})
				if err != nil || res.ExitCode != 0 {
					t.Errorf("%s: %q: %+v, %v", se.me, cmd, res, err)
				}
				return res.Output
			}
			if out := exec("export V=" + se.me + "; mkdir -p /tmp/w-" + se.me + " && cd /tmp/w-" + se.me); out != "" {
				t.Errorf("%s: setup printed %q", se.me, out)
			}
			for k := range calls {
				want := fmt.Sprintf("%s-%d\n/tmp/w-%s\n", se.me, k, se.me)
				if out := exec(fmt.Sprintf("sleep 0.0$((RANDOM %% 50)); echo $V-%d; pwd", k)); out != want {
					t.Errorf("%s call %d: got %q, want %q", se.me, k, out, want)
				}
			}
		})
	}
	close(start)
	wg.Wait()
}

// createMany makes n sandboxes at once, each deleted when the test ends.
func createMany(t *testing.T, svc *sandbox.Service, c sandbox.Caller, n int, req sandbox.CreateRequest) []sandboxrec.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs := make([]sandboxrec.Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { sbs[i], errs[i] = svc.Create(ctx, c, req) })
	}
	wg.Wait()
	var out []sandboxrec.Sandbox
	for i, sb := range sbs {
		if errs[i] != nil {
			t.Errorf("create %d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() {
			if err := svc.Delete(context.Background(), c, sb.ID); err != nil {
				t.Errorf("delete %s: %v", sb.ID, err)
			}
		})
		out = append(out, sb)
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// readUntil reads a terminal until what it showed holds want, and returns
// all it read. The shell ending or the terminal failing first is fatal.
func readUntil(t *testing.T, term sandbox.Terminal, want string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []byte
	for !bytes.Contains(got, []byte(want)) {
		out, exit, err := term.Next(ctx)
		got = append(got, out...)
		switch {
		case err != nil:
			t.Fatalf("waiting for %q: %v; got %q", want, err, tail(got))
		case exit != nil:
			t.Fatalf("waiting for %q: the shell exited (%+v); got %q", want, *exit, tail(got))
		}
	}
	return string(got)
}

func tail(b []byte) []byte { return b[max(0, len(b)-500):] }

// interactive creates an interactive session in sandbox id and attaches to
// it; the terminal is closed when the test ends.
func interactive(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id string) (sandbox.SessionInfo, sandbox.Terminal) {
	t.Helper()
	ctx := context.Background()
	info, err := svc.CreateSession(ctx, c, id, sandbox.SessionRequest{Mode: sandbox.SessionModeInteractive})
	if err != nil {
		t.Fatal(err)
	}
	return info, attach(t, svc, c, id, info.ID)
}

func attach(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id, sid string) sandbox.Terminal {
	t.Helper()
	term, err := svc.AttachSession(context.Background(), c, id, sid, 0)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(term.Close)
	return term
}

func typeIn(t *testing.T, term sandbox.Terminal, s string) {
	t.Helper()
	if _, err := term.Write([]byte(s)); err != nil {
		t.Fatalf("type %q: %v", s, err)
	}
}

func sessionInfo(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id, sid string) sandbox.SessionInfo {
	t.Helper()
	list, err := svc.ListSessions(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == sid {
			return s
		}
	}
	t.Fatalf("session %s not listed: %+v", sid, list)
	return sandbox.SessionInfo{}
}

// TestSessionInteractive: a person's terminal: prompt, echo, a REPL,
// TERM set.
func TestSessionInteractive(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	info, term := interactive(t, svc, c, sb.ID)
	if info.Mode != sandbox.SessionModeInteractive || info.Cols != 120 || info.Rows != 40 || info.Attached != 0 {
		t.Errorf("created: %+v", info)
	}
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Attached != 1 {
		t.Errorf("attached %d, want 1", got.Attached)
	}
	typeIn(t, term, "echo term=$TERM\r")
	readUntil(t, term, "term=xterm-256color", 10*time.Second)
	typeIn(t, term, "python3\r")
	readUntil(t, term, ">>> ", 15*time.Second)
	typeIn(t, term, "print(6*7)\r")
	readUntil(t, term, "42", 10*time.Second)
	typeIn(t, term, "exit()\r")
	typeIn(t, term, "echo back-$((1+2))\r")
	readUntil(t, term, "back-3", 10*time.Second)
}

// TestSessionResize: a resize reaches the shell and the listing.
func TestSessionResize(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	info, term := interactive(t, svc, c, sb.ID)
	if err := term.Resize(100, 31); err != nil {
		t.Fatal(err)
	}
	typeIn(t, term, "stty size\r")
	readUntil(t, term, "31 100", 10*time.Second)
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Cols != 100 || got.Rows != 31 {
		t.Errorf("listed size %dx%d, want 100x31", got.Cols, got.Rows)
	}
	for _, size := range [][2]uint16{{0, 10}, {10, 0}, {1001, 10}, {10, 1001}} {
		wantKind(t, fmt.Sprintf("resize %dx%d", size[0], size[1]), term.Resize(size[0], size[1]), sandbox.ErrInvalid)
	}
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Cols != 100 || got.Rows != 31 {
		t.Errorf("listed size after refused resizes %dx%d, want 100x31", got.Cols, got.Rows)
	}
}

// TestSessionTwoTerminals: two clients on one session both see what one
// of them typed.
func TestSessionTwoTerminals(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	info, a := interactive(t, svc, c, sb.ID)
	b := attach(t, svc, c, sb.ID, info.ID)
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Attached != 2 {
		t.Errorf("attached %d, want 2", got.Attached)
	}
	typeIn(t, a, "echo both-$((2*3))\r")
	readUntil(t, a, "both-6", 10*time.Second)
	readUntil(t, b, "both-6", 10*time.Second)
	// And the other way round.
	typeIn(t, b, "echo from-b-$((2+3))\r")
	readUntil(t, b, "from-b-5", 10*time.Second)
	readUntil(t, a, "from-b-5", 10*time.Second)
	b.Close()
	b.Close() // twice is harmless
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Attached != 1 {
		t.Errorf("attached %d after one detached, want 1", got.Attached)
	}
	a.Close()
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Attached != 0 {
		t.Errorf("attached %d after both detached, want 0", got.Attached)
	}
}

// TestSessionReattach: detaching leaves the shell running; a client that
// attaches later is shown the scrollback first.
func TestSessionReattach(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	info, term := interactive(t, svc, c, sb.ID)
	typeIn(t, term, "echo first-$((40+2)); cd /tmp\r")
	readUntil(t, term, "first-42", 10*time.Second)
	term.Close()
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.Attached != 0 || got.State != "ready" {
		t.Errorf("after detach: %+v", got)
	}
	// Output while nobody is attached is kept too.
	again := attach(t, svc, c, sb.ID, info.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, exit, err := again.Next(ctx)
	if err != nil || exit != nil {
		t.Fatalf("first read after re-attach: %q, %v, %v", out, exit, err)
	}
	if !bytes.Contains(out, []byte("first-42")) {
		t.Errorf("first read after re-attach does not replay the earlier output: %q", out)
	}
	typeIn(t, again, "echo again-$((1+1)) $PWD\r")
	readUntil(t, again, "again-2 /tmp", 10*time.Second)
}

// TestSessionWatchExec: a client attached to an exec-mode session sees
// each command as if typed and its output, never the end markers.
func TestSessionWatchExec(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()
	info, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode != sandbox.SessionModeExec {
		t.Errorf("default mode %q, want %q", info.Mode, sandbox.SessionModeExec)
	}
	term := attach(t, svc, c, sb.ID, info.ID)
	for _, cmd := range []string{"echo watched", "(exit 3)", "printf 'a\\nb\\n'", "echo last"} {
		if _, err := svc.SessionExec(ctx, c, sb.ID, info.ID, sandbox.SessionExecRequest{Command: cmd, TimeoutS: 10}); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	got := readUntil(t, term, "$ echo last\r\nlast\r\n", 10*time.Second)
	want := "$ echo watched\r\nwatched\r\n$ (exit 3)\r\n$ printf 'a\\nb\\n'\r\na\r\nb\r\n$ echo last\r\nlast\r\n"
	if got != want {
		t.Errorf("watcher saw %q, want %q", got, want)
	}
	if strings.Contains(got, "\x1eAIRLOCK") || strings.ContainsAny(got, "\x1e\x1f") {
		t.Errorf("watcher saw marker bytes: %q", got)
	}
	// A second watcher attaching now gets the same from the scrollback.
	late := attach(t, svc, c, sb.ID, info.ID)
	if got2 := readUntil(t, late, "last\r\n", 10*time.Second); got2 != want {
		t.Errorf("late watcher saw %q, want %q", got2, want)
	}
}

// TestSessionExit: the shell's exit status reaches attached clients.
func TestSessionExit(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	info, term := interactive(t, svc, c, sb.ID)
	typeIn(t, term, "exit 7\r")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, exit, err := term.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the exit: %v", err)
		}
		if exit != nil {
			if exit.ExitCode != 7 {
				t.Errorf("exit %+v, want code 7", *exit)
			}
			break
		}
	}
	// It stays ended for later reads and is listed so.
	if _, exit, err := term.Next(ctx); err != nil || exit == nil || exit.ExitCode != 7 {
		t.Errorf("read after the exit: %v, %v", exit, err)
	}
	if got := sessionInfo(t, svc, c, sb.ID, info.ID); got.State != "ended" {
		t.Errorf("state %q, want ended", got.State)
	}
	if _, err := term.Write([]byte("echo hi\r")); err == nil {
		t.Errorf("typing into an ended shell: no error")
	}
}

// TestSessionTerminalEnds: deleting the session or destroying the sandbox
// wakes a client waiting for output with an error, at once.
func TestSessionTerminalEnds(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()

	// waitEnd reads term until it fails, in the background; the returned
	// channel gets the error and when it came.
	type end struct {
		err  error
		exit *sandbox.ExecResult
		at   time.Time
	}
	waitEnd := func(term sandbox.Terminal) <-chan end {
		ch := make(chan end, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for {
				_, exit, err := term.Next(ctx)
				if err != nil || exit != nil {
					ch <- end{err, exit, time.Now()}
					return
				}
			}
		}()
		return ch
	}
	check := func(what string, ch <-chan end, since time.Time) {
		t.Helper()
		select {
		case e := <-ch:
			if e.err == nil {
				t.Errorf("%s: Next ended with exit %+v, want an error", what, *e.exit)
			} else if errors.Is(e.err, context.DeadlineExceeded) {
				t.Errorf("%s: Next did not return", what)
			}
			if d := e.at.Sub(since); d > time.Second {
				t.Errorf("%s: Next returned %v later, want within 1 s", what, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Next still waiting 10 s later", what)
		}
	}

	// Deleting the session.
	info, term := interactive(t, svc, c, sb.ID)
	typeIn(t, term, "echo up-$((1+1))\r")
	readUntil(t, term, "up-2", 10*time.Second)
	ch := waitEnd(term)
	time.Sleep(200 * time.Millisecond) // let it drain and wait
	t0 := time.Now()
	if err := svc.DeleteSession(ctx, c, sb.ID, info.ID); err != nil {
		t.Fatal(err)
	}
	check("delete session", ch, t0)

	// Destroying the sandbox, with an exec-mode watcher and an
	// interactive client waiting.
	_, term = interactive(t, svc, c, sb.ID)
	typeIn(t, term, "echo up-$((1+2))\r")
	readUntil(t, term, "up-3", 10*time.Second)
	ex, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	watcher := attach(t, svc, c, sb.ID, ex.ID)
	ch, chW := waitEnd(term), waitEnd(watcher)
	time.Sleep(200 * time.Millisecond)
	t0 = time.Now()
	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	check("destroy sandbox (interactive)", ch, t0)
	check("destroy sandbox (watcher)", chW, t0)
	if _, err := term.Write([]byte("echo hi\r")); err == nil {
		t.Errorf("typing after the sandbox was destroyed: no error")
	}
	if _, err := svc.AttachSession(ctx, c, sb.ID, ex.ID, 0); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("attach in a destroyed sandbox: %v", err)
	}
}

// TestSessionModes: what each mode accepts.
func TestSessionModes(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	sb := create(t, svc, c, sandbox.CreateRequest{TimeoutS: 600})
	ctx := context.Background()
	_, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: "bogus"})
	wantKind(t, "mode bogus", err, sandbox.ErrInvalid)
	_, err = svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: sandbox.SessionModeInteractive, Shell: "zsh"})
	wantKind(t, "interactive zsh", err, sandbox.ErrInvalid)
	for _, req := range []sandbox.SessionRequest{{Cols: 1001}, {Rows: 1001}, {Mode: sandbox.SessionModeInteractive, Cols: 1001}} {
		_, err = svc.CreateSession(ctx, c, sb.ID, req)
		wantKind(t, fmt.Sprintf("%+v", req), err, sandbox.ErrInvalid)
	}
	if l, _ := svc.ListSessions(ctx, c, sb.ID); len(l) != 0 {
		t.Errorf("refused requests left sessions: %+v", l)
	}
	// 0 is the default size; 1000 the largest.
	info, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Cols: 0, Rows: 0})
	if err != nil || info.Cols != 120 || info.Rows != 40 || info.Mode != sandbox.SessionModeExec {
		t.Errorf("default size: %+v, %v", info, err)
	}
	big, err := svc.CreateSession(ctx, c, sb.ID, sandbox.SessionRequest{Mode: sandbox.SessionModeInteractive, Cols: 1000, Rows: 1})
	if err != nil || big.Cols != 1000 || big.Rows != 1 {
		t.Fatalf("1000x1: %+v, %v", big, err)
	}
	_, err = svc.SessionExec(ctx, c, sb.ID, big.ID, sandbox.SessionExecRequest{Command: "true"})
	wantKind(t, "exec in an interactive session", err, sandbox.ErrConflict)
	// An exec-mode session runs commands whether or not it is watched.
	term := attach(t, svc, c, sb.ID, info.ID)
	if res, err := svc.SessionExec(ctx, c, sb.ID, info.ID, sandbox.SessionExecRequest{Command: "stty size"}); err != nil || res.Output != "40 120\n" {
		t.Errorf("stty size in exec mode: %+v, %v", res, err)
	}
	term.Close()
	if res, err := svc.SessionExec(ctx, c, sb.ID, info.ID, sandbox.SessionExecRequest{Command: "echo ok"}); err != nil || res.Output != "ok\n" {
		t.Errorf("after detaching: %+v, %v", res, err)
	}
	// Another tenant cannot attach.
	_, err = svc.AttachSession(ctx, tenant(t, 0, 0), sb.ID, info.ID, 0)
	wantKind(t, "attach as another tenant", err, sandbox.ErrNotFound)
	_, err = svc.AttachSession(ctx, c, sb.ID, "ses-nope", 0)
	wantKind(t, "attach to no session", err, sandbox.ErrNotFound)
}
