package linux_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// lockedBuf collects a terminal's output for a test to poll.
type lockedBuf = linuxtest.Buffer

// waitFor polls out until it holds want (a generous bound: this checks
// behaviour, not speed).
func waitFor(t *testing.T, out *lockedBuf, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(out.String(), want) {
			return
		}
	}
	t.Fatalf("terminal never showed %q; it shows %q", want, out.String())
}

// TestTTY runs an interactive shell and python on a terminal: it is a
// terminal to them (isatty, a controlling terminal, stty size), typed
// input reaches them, and a resize changes what they see.
func TestTTY(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	in, typed := io.Pipe()
	defer typed.Close()
	var out lockedBuf
	p, err := sb.Start(context.Background(), runtime.ExecRequest{
		Argv: []string{"/bin/sh", "-i"}, Stdin: in, Stdout: &out, TTY: &runtime.TTYSize{Cols: 100, Rows: 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	type_ := func(s string) {
		t.Helper()
		if _, err := io.WriteString(typed, s); err != nil {
			t.Fatal(err)
		}
	}
	type_("stty size; test -t 0 && echo IS-A-TTY; tty\n")
	waitFor(t, &out, "30 100")
	waitFor(t, &out, "IS-A-TTY")
	waitFor(t, &out, "/dev/pts/")
	if err := p.(runtime.Resizer).Resize(runtime.TTYSize{Cols: 132, Rows: 43}); err != nil {
		t.Fatal(err)
	}
	type_("stty size\n")
	waitFor(t, &out, "43 132")
	type_("python3 -q\n")
	type_("print(6*7)\n")
	waitFor(t, &out, "42")
	type_("exit()\n")
	type_("exit 3\n")
	st, err := p.Wait()
	if err != nil || st.Code != 3 {
		t.Errorf("exit: %+v, %v", st, err)
	}
	if err := p.(runtime.Resizer).Resize(runtime.TTYSize{Cols: 0, Rows: 0}); err == nil {
		t.Errorf("a zero size was accepted")
	}
}
