package cast

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestAsciinemaReadsCasts hands casts to asciinema's own parser: `asciinema
// cat` prints a file's output events, which must be exactly what the
// recorded terminal printed.
func TestAsciinemaReadsCasts(t *testing.T) {
	bin, err := exec.LookPath("asciinema")
	if err != nil {
		linuxtest.Lacking(t, "the check of casts against asciinema's parser", "asciinema is not installed (apt-get install asciinema)")
	}
	text := "$ ls\r\nfile  é€😀\r\n\x1b[1m<bold> & \"q\"\x1b[0m\r\n$ "
	l := &logOf{t: t}
	l.add(0, audit.SessionCreated, kv("session_id", "ses_1", "mode", "interactive", "shell", "/bin/sh", "cols", 90, "rows", 20))
	for i := 0; i < len(text); i += 3 { // cuts inside every multi-byte character
		l.add(float64(i), audit.SessionOutput, piece(text[i:min(i+3, len(text))], "session_id", "ses_1"))
	}
	l.add(50, audit.SessionInput, piece("ls\r", "session_id", "ses_1")).
		add(60, audit.SessionResized, kv("session_id", "ses_1", "cols", 100, "rows", 30)).
		add(70, audit.ExecStarted, kv("exec_id", "ex_1", "argv", []string{"printf", "a\\nb é\\n"})).
		add(80, audit.ExecOutput, piece("a\nb \xc3", "exec_id", "ex_1", "stream", "stdout")).
		add(81, audit.ExecOutput, piece("\xa9\n", "exec_id", "ex_1", "stream", "stdout")).
		add(90, audit.ExecExited, kv("exec_id", "ex_1", "exit_code", 0)).
		add(100, audit.SessionEnded, kv("session_id", "ses_1", "exit_code", 0))

	for _, tc := range []struct {
		name string
		make func() (*Cast, error)
		want string
	}{
		{"session", func() (*Cast, error) { return Session(l.events, "ses_1") }, text},
		{"exec", func() (*Cast, error) { return Exec(l.events, "ex_1") }, "a\r\nb é\r\n"},
		{"sandbox", func() (*Cast, error) { return Sandbox(l.events) }, text + "a\r\nb é\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), tc.name+".cast")
			var buf bytes.Buffer
			if _, err := c.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got := asciinemaCat(t, bin, file)
			if got != tc.want {
				t.Errorf("asciinema cat printed %q, want %q\nfile:\n%s", got, tc.want, buf.Bytes())
			}
		})
	}
}

// asciinemaCat runs `asciinema cat file` and returns what it prints.
// asciinema opens /dev/tty (to put it in raw mode) even to print, so it
// runs in a session of its own with a pseudo-terminal as its controlling
// terminal, while its output goes to a pipe and reaches us untranslated.
func asciinemaCat(t *testing.T, bin, file string) string {
	t.Helper()
	master, peer := openPTY(t)
	defer master.Close()
	defer peer.Close()
	cmd := exec.Command(bin, "cat", file)
	cmd.Stdin = peer
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cfg := t.TempDir()
	cmd.Env = append(os.Environ(), "ASCIINEMA_CONFIG_HOME="+cfg, "HOME="+cfg, "PYTHONIOENCODING=utf-8")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Fatalf("asciinema cat %s: %v\n%s", file, err, errb.Bytes())
	}
	return out.String()
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, peer *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Lacking(t, "no pseudo-terminals here to run asciinema in: "+err.Error())
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	p, err := os.OpenFile(filepath.Join("/dev/pts", strconv.Itoa(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pty peer: %v", err)
	}
	return m, p
}
