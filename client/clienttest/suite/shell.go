package suite

import (
	"fmt"
	"io"
	"strings"
)

// outcome is what a command does: its output and how it ends.
type outcome struct {
	stdout, stderr string
	code, signal   int
}

// The suite's commands and what sh makes of them. The fake answers from
// this table (Shell); the real server runs them, and the same assertions
// hold of both, so the table cannot drift from the truth unnoticed.
var (
	argvOut = []string{"sh", "-c", `printf 'out:%s,%s' "$1" "$2"; printf err >&2; exit 3`, "sh", "a", "b c"}
	// A command string runs as sh -c STRING.
	scriptOut    = "echo hi; echo oops >&2; exit 3"
	scriptKilled = "kill -9 $$"
	scripts      = map[string]outcome{
		key(argvOut...):               {stdout: "out:a,b c", stderr: "err", code: 3},
		key("sh", "-c", scriptOut):    {stdout: "hi\n", stderr: "oops\n", code: 3},
		key("sh", "-c", scriptKilled): {code: 137, signal: 9},
		key("sh", "-c", "true"):       {},
	}
)

func key(argv ...string) string { return strings.Join(argv, "\x00") }

// Shell is a clienttest.ExecFunc that does what sh does with the suite's
// commands; any other is "not found" (127), as sh says of an unknown one.
func Shell(argv []string, stdout, stderr io.Writer) (exitCode, signal int) {
	o, ok := scripts[key(argv...)]
	if !ok {
		fmt.Fprintf(stderr, "suite.Shell: %q: not found\n", argv)
		return 127, 0
	}
	io.WriteString(stdout, o.stdout)
	io.WriteString(stderr, o.stderr)
	return o.code, o.signal
}
