package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

var (
	rtOnce   sync.Once
	rt       *linux.Runtime
	rtErr    error
	stateDir string
	seq      atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if rt != nil {
		if err := rt.Teardown(); err != nil {
			fmt.Fprintln(os.Stderr, "teardown runtime:", err)
			code = 1
		}
	}
	if stateDir != "" {
		os.RemoveAll(stateDir)
	}
	linuxtest.Cleanup()
	os.Exit(code)
}

// testRuntime returns the runtime the package's tests share, so the disk
// pool and the base template are set up once.
func testRuntime(t *testing.T) *linux.Runtime { return testRuntimeB(t) }

func testRuntimeB(t testing.TB) *linux.Runtime {
	t.Helper()
	linuxtest.Require(t)
	rtOnce.Do(func() {
		stateDir, rtErr = os.MkdirTemp("", "airlock-state-")
		if rtErr != nil {
			return
		}
		os.Chmod(stateDir, 0o711)
		rt, rtErr = linux.New(linux.Config{StateDir: stateDir, Binary: linuxtest.Init(t), DiskPoolBytes: 8 << 30})
	})
	if rtErr != nil {
		t.Fatalf("runtime: %v", rtErr)
	}
	return rt
}

// newSandbox creates a sandbox that is destroyed when the test ends.
func newSandbox(t *testing.T, lim runtime.Limits) runtime.Sandbox {
	t.Helper()
	r := testRuntime(t)
	id := fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := r.Create(ctx, runtime.Spec{ID: id, Limits: lim})
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(context.Background()); err != nil {
			t.Errorf("destroy sandbox %s: %v", id, err)
		}
	})
	return sb
}

type result struct {
	stdout, stderr string
	st             runtime.ExitStatus
}

// sh runs a shell script in sb and returns what it printed and how it ended.
func sh(t *testing.T, sb runtime.Sandbox, script string) result {
	t.Helper()
	return execIn(t, sb, runtime.ExecRequest{Shell: script})
}

func execIn(t *testing.T, sb runtime.Sandbox, req runtime.ExecRequest) result {
	t.Helper()
	out, errs, st := linuxtest.Exec(t, sb, req)
	return result{out, errs, st}
}

// mustSh is sh that fails the test unless the script exits 0.
func mustSh(t *testing.T, sb runtime.Sandbox, script string) string {
	t.Helper()
	return linuxtest.MustSh(t, sb, script)
}

// copyIn puts a host file into the sandbox through the file API.
func copyIn(t *testing.T, sb runtime.Sandbox, hostPath, path string) {
	t.Helper()
	f, err := os.Open(hostPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := sb.WriteFile(context.Background(), path, f, 0o755); err != nil {
		t.Fatalf("copy %s into sandbox: %v", hostPath, err)
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// containsState reports whether a /proc/<pid>/stat line has state s.
func containsState(stat []byte, s byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == s
}
