// Command gotest runs `go test` and says what plain `go test ./...` hides:
// which tests skipped, and why. Its arguments are go test's. It prints
// what go test prints (an "ok" line for each package that passed, all the
// output of one that failed), then every skipped test with its reason. It
// exits with go test's status, and in CI (CI=true) with 1 when a test
// skipped for anything but a feature the host lacks (testenv.Unsupported):
// CI installs every tool and runs as root, so there such a skip is a gap
// in .ci/run, not a reason. First it builds the sandbox init the
// binaries under test embed (go generate ./internal/initbin) and starts
// the PostgreSQL and kube-apiserver the tests share (services.go).
//
//	go run ./internal/testenv/gotest -race -count=1 ./...
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/internal/testenv"
)

func main() {
	// Every binary that starts sandboxes embeds the sandbox init (package
	// initbin), and the tests build and run such binaries: it is built
	// from the sources at hand first, never taken stale from an earlier
	// build.
	gen := exec.Command("go", "generate", "github.com/airlockhq/airlock/internal/initbin")
	gen.Stdout, gen.Stderr = os.Stderr, os.Stderr
	if err := gen.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest: build the sandbox init (go generate ./internal/initbin):", err)
		os.Exit(2)
	}
	stop := startServices()
	code := run(os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// run runs go test with args, writing its report to w, and returns the
// exit status.
func run(args []string, w io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, withTimeout(args)...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 2
	}
	// Ctrl-C and SIGTERM go to go test, which stops its test binaries and
	// lets their cleanups run; the report still ends the output.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	rep := newReport(w, verbose(args))
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		rep.line(sc.Bytes())
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "gotest:", err)
			return 2
		}
		code = ee.ExitCode()
	}
	rep.summary()
	if n := rep.forbidden(); n > 0 && testenv.InCI() {
		fmt.Fprintf(w, "gotest: %d test%s skipped in CI for a missing tool or privilege: .ci/run must provide them\n", n, plural(n))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// defaultTimeout bounds each test binary when the command line sets no
// -timeout: go test's own 10 minutes is shorter than the end-to-end
// package needs (it runs every harness CLI, builds templates, starts
// servers), so the README's command would fail on a healthy tree.
const defaultTimeout = "60m"

// withTimeout is args with -timeout defaultTimeout before them unless
// they set one.
func withTimeout(args []string) []string {
	for _, a := range args {
		if a == "-timeout" || a == "--timeout" || strings.HasPrefix(a, "-timeout=") || strings.HasPrefix(a, "--timeout=") || a == "-test.timeout" || strings.HasPrefix(a, "-test.timeout=") {
			return args
		}
	}
	return append([]string{"-timeout", defaultTimeout}, args...)
}

// verbose reports whether go test was asked for every test's output.
func verbose(args []string) bool {
	for _, a := range args {
		if a == "-v" || a == "--v" || a == "-v=true" || a == "-test.v" {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
