// Package testenv is the test suite's view of the machine it runs on: what
// a test needs (root, a tool, a kernel feature) and what happens when it is
// missing. Outside CI a test that cannot run skips and says why. In CI
// (CI=true), which installs every tool the tests use and runs as root, a
// missing tool or privilege fails the test instead, so the suite can never
// pass because its tests skipped. Only what no CI machine can change, a
// feature the kernel or the architecture lacks, skips there too, marked
// Unsupported; the suite's runner (gotest) lists every skip at the end.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// UnsupportedPrefix starts the reason of a test skipped because the host
// itself cannot do what it tests; gotest allows those in CI.
const UnsupportedPrefix = "unsupported here: "

// InCI reports whether the suite runs in CI.
func InCI() bool { return os.Getenv("CI") != "" && os.Getenv("CI") != "false" }

// Lacking skips t (in CI, fails it) because something it needs, a tool or
// a privilege that CI would have, is missing.
func Lacking(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI must run this test: %s", why)
	}
	t.Skipf("skipping: %s", why)
}

// Unsupported skips t, in CI too, because the host cannot do what it
// tests (say, a kernel built without the feature).
func Unsupported(t testing.TB, why string) {
	t.Helper()
	t.Skip(UnsupportedPrefix + why)
}

// RequiresRoot skips (in CI, fails) t unless it runs as root; what says
// what root is for.
func RequiresRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Lacking(t, "needs root to "+what+" (run the suite as root, as .ci/run does)")
	}
}

// LookPath returns the path of tool, or skips (in CI, fails) t, naming the
// Debian package that has it.
func LookPath(t testing.TB, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		Lacking(t, tool+" is not installed (apt-get install "+pkg+")")
	}
	return p
}
