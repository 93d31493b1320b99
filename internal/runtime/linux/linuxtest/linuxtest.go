// Package linuxtest gates tests that need root, namespaces and cgroups.
// Outside CI such a test skips with the reason; in CI (CI=true) a missing
// requirement fails the test, so a suite can never pass only because every
// sandbox test skipped.
package linuxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// Require skips (or, in CI, fails) t unless the host can run sandboxes with
// every layer: root, user namespaces and a memory cgroup controller.
func Require(t testing.TB) {
	t.Helper()
	if reason := missing(); reason != "" {
		testenv.Lacking(t, "sandbox test: "+reason)
	}
}

// Lacking skips t (in CI, fails it) because what it needs is missing:
// CI installs everything the tests use, so there a gap is a bug of
// .ci/run, not a reason to skip.
func Lacking(t testing.TB, test, why string) {
	t.Helper()
	testenv.Lacking(t, test+": "+why)
}

func missing() string {
	if runtime.GOOS != "linux" {
		return "not Linux"
	}
	if os.Geteuid() != 0 {
		return "needs root (run the suite as root, as .ci/run does)"
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || string(b) == "0\n" {
		return "user namespaces unavailable"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			return "no cgroup filesystem with a memory controller"
		}
	}
	return ""
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Build compiles the airlock binary (CGO_ENABLED=0, as shipped, with the
// sandbox init embedded), the init on its own (Init) and the syscall probe
// once per test process and returns the paths of the first and last. The test
// binary itself cannot serve as a sandbox init: under -race it links cgo,
// and a cgo process cannot change credentials on all threads.
func Build(t testing.TB) (airlock, probe string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "airlock-test-bin-")
		if buildErr != nil {
			return
		}
		root := moduleRoot()
		// The sandbox init the airlock binary embeds, from the sources at
		// hand (gotest builds it too; a plain go test must not run a stale
		// one).
		gen := exec.Command("go", "generate", "./internal/initbin")
		gen.Dir = root
		if out, err := gen.CombinedOutput(); err != nil {
			buildErr = &buildError{"./internal/initbin", string(out), err}
			return
		}
		for _, b := range [][2]string{{"airlock", "./cmd/airlock"}, {"airlock-init", "./cmd/airlock-init"}, {"probe", "./internal/runtime/linux/testdata/probe"}} {
			cmd := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(buildDir, b[0]), b[1])
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{b[1], string(out), err}
				return
			}
		}
		// The sandbox's root (a different host uid) must be able to exec them.
		os.Chmod(buildDir, 0o755)
	})
	if buildErr != nil {
		t.Fatalf("build test binaries: %v", buildErr)
	}
	return filepath.Join(buildDir, "airlock"), filepath.Join(buildDir, "probe")
}

// Init returns the sandbox init program (cmd/airlock-init) that Build
// compiled, for a runtime's Config.Binary: a test binary embeds no init.
func Init(t testing.TB) string {
	t.Helper()
	Build(t)
	return filepath.Join(buildDir, "airlock-init")
}

var (
	versionsMu sync.Mutex
	versions   = map[string]string{}
)

// BuildVersion builds the airlock binary again with its version string set
// to v (as a release build's is), for tests of an upgrade in place: two
// versions' daemons on one data dir. It returns the binary's path.
func BuildVersion(t testing.TB, v string) string {
	t.Helper()
	Build(t) // the build directory, and the first build's cache
	versionsMu.Lock()
	defer versionsMu.Unlock()
	if bin := versions[v]; bin != "" {
		return bin
	}
	bin := filepath.Join(buildDir, "airlock-"+v)
	cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X github.com/airlockhq/airlock/internal/version.Version="+v, "-o", bin, "./cmd/airlock")
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build airlock %s: %v\n%s", v, err, out)
	}
	versions[v] = bin
	return bin
}

// Cleanup removes what Build made; call it from TestMain.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "."
	}
	return filepath.Dir(string(out[:len(out)-1]))
}

// StateDir returns a new state directory that a sandbox's root (an
// unprivileged host uid) can traverse, unlike t.TempDir's. When the test
// ends, the disk pool a runtime mounted there is unmounted and the
// directory removed; cleanups the test registers later run first.
func StateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "airlock-state-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Unmount(filepath.Join(dir, "sandboxes"), unix.MNT_DETACH)
		os.RemoveAll(dir)
	})
	return dir
}
