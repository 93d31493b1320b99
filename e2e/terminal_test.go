package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// readUntil reads a terminal until its output so far matches want.
func readUntil(t *testing.T, term *client.Terminal, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	re := regexp.MustCompile(want)
	var got []byte
	for !re.Match(got) {
		b, err := term.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v; got %q", want, err, got)
		}
		got = append(got, b...)
	}
	return string(got)
}

// TestTerminalOverWebSocket drives an interactive session the way a
// terminal in a browser would: python3 at the prompt, a resize, two
// clients at once, a re-attach that replays the scrollback, and the
// sandbox's end arriving as an error rather than silence.
func TestTerminalOverWebSocket(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	ses := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{Mode: "interactive", Cols: 80, Rows: 24}))
	a := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, ses.ID))
	b := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, ses.ID))
	a.Write(ctx, []byte("python3\r"))
	readUntil(t, a, ">>> ")
	a.Write(ctx, []byte("print(6*7)\r"))
	readUntil(t, a, "\r\n42\r\n")
	readUntil(t, b, "\r\n42\r\n") // the other client sees it too
	b.Write(ctx, []byte("exit()\r"))
	// a and b are separate connections, so a's next keys could overtake
	// b's: wait for the shell's prompt before typing on a.
	readUntil(t, a, `\$ $`)
	a.Resize(ctx, 101, 33)
	a.Write(ctx, []byte("stty size\r"))
	readUntil(t, a, "33 101")
	a.Close()
	b.Close()

	// Re-attached, the earlier output comes first, then the shell goes on.
	r := must[*client.Terminal](t)(c.AttachSession(ctx, sb.ID, ses.ID))
	readUntil(t, r, "(?s)42.*33 101")
	r.Write(ctx, []byte("echo again-$((1+1))\r"))
	readUntil(t, r, "again-2")

	// Destroying the sandbox ends the terminal with an explicit error.
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := r.Read(ctx); err != nil {
				ended <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		var end *client.TerminalEnd
		if !errors.As(err, &end) || end.Exited || !strings.Contains(end.Message, "destroyed") {
			t.Errorf("terminal of a destroyed sandbox: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the terminal learned of the destroy after %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("terminal still open 5 s after its sandbox was destroyed")
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}

// tmux is a tmux server of the test's own, on a private socket.
type tmux struct {
	t    *testing.T
	sock string
	env  []string
}

func startTmux(t *testing.T, env ...string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		linuxtest.Lacking(t, "the tmux test", "tmux is not installed (.ci/run installs it)")
	}
	m := &tmux{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock"), env: append(os.Environ(), append(env, "TERM=xterm-256color")...)}
	t.Cleanup(func() { exec.Command("tmux", "-S", m.sock, "kill-server").Run() })
	return m
}

func (m *tmux) run(args ...string) string {
	m.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", m.sock}, args...)...)
	cmd.Env = m.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen waits until the pane (with its history) matches want.
func (m *tmux) screen(target, want string) string {
	m.t.Helper()
	re := regexp.MustCompile(want)
	var got string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = m.run("capture-pane", "-p", "-J", "-S", "-200", "-t", target)
		// Without the blank rest of the screen and trailing blanks, so
		// that $ anchors at the cursor's line.
		lines := strings.Split(got, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		got = strings.TrimRight(strings.Join(lines, "\n"), "\n")
		if re.MatchString(got) {
			return got
		}
	}
	m.t.Fatalf("pane %s never showed %q; it shows:\n%s", target, want, got)
	return ""
}

// TestShellUnderTmux uses `airlock shell` and `airlock attach` as a person
// would, in a real terminal: keys typed into tmux, the screen read back.
func TestShellUnderTmux(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	m := startTmux(t, "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
	m.run("new-session", "-d", "-s", "one", "-x", "100", "-y", "30", s.bin+" shell "+sb.ID+"; echo EXIT=$?; sleep 600")
	m.screen("one", `\$$`)
	m.run("send-keys", "-t", "one", "cd /tmp && echo $((6*7)) && stty size", "Enter")
	m.screen("one", `\n42\n30 100\n`)
	m.run("resize-window", "-t", "one", "-x", "120", "-y", "40")
	m.run("send-keys", "-t", "one", "stty size", "Enter")
	m.screen("one", `\n40 120\n`)
	m.run("send-keys", "-t", "one", "python3", "Enter")
	m.screen("one", `>>>$`)
	m.run("send-keys", "-t", "one", "print(6*7)", "Enter")
	m.screen("one", `>>> print\(6\*7\)\n42\n>>>$`)
	m.run("send-keys", "-t", "one", "C-d")
	m.screen("one", `/tmp\$$`)
	// Ctrl-] detaches: the command ends with 0 and the shell runs on.
	m.run("send-keys", "-t", "one", "C-]")
	screen := m.screen("one", `detached from session (ses-[0-9a-f]+)(?s:.*)EXIT=0`)
	sid := regexp.MustCompile(`ses-[0-9a-f]+`).FindString(screen)
	list := must[[]client.Session](t)(c.ListSessions(ctx, sb.ID))
	if len(list) != 1 || list[0].ID != sid || list[0].State != "ready" || list[0].Mode != "interactive" {
		t.Fatalf("sessions after detach: %+v", list)
	}

	// Attached again from another terminal: the earlier screen comes
	// back, the cwd is kept, and the shell's exit status is the command's.
	m.run("new-session", "-d", "-s", "two", "-x", "90", "-y", "25", s.bin+" attach "+sb.ID+" "+sid+"; echo EXIT=$?; sleep 600")
	m.screen("two", `42\n`)
	m.run("send-keys", "-t", "two", "pwd; stty size; exit 5", "Enter")
	m.screen("two", `\n/tmp\n25 90\n(?s:.*)EXIT=5`)
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	assertNoSandboxesLeft(t, s, sb.ID)
}
