package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestShutdownCleansUp pins what SIGTERM of `airlock serve` used to leave:
// its warm-pool sandboxes running, its disk pool mounted and the loop
// device attached. Now the pool is destroyed, and the disk pool unmounted
// unless a user sandbox (which keeps running) still has its layer there.
// `airlock teardown` then removes everything, and refuses while a server
// runs on the data dir.
func TestShutdownCleansUp(t *testing.T) {
	s := startServer(t, "")
	waitPoolBooted(t, s)
	s.stop()
	if err := leftIn(s.dataDir, true); err != nil {
		t.Errorf("after SIGTERM with no user sandbox: %v", err)
	}

	s.start()
	c := s.admin()
	kept := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	waitPoolBooted(t, s)
	s.stop()
	entries, _ := os.ReadDir(filepath.Join(s.dataDir, "sandboxes"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pool-") {
			t.Errorf("warm-pool sandbox %s left after SIGTERM", e.Name())
		}
	}
	s.start()
	c = s.admin()
	if res, err := c.Exec(ctx, kept.ID, client.ExecRequest{Command: "echo alive"}); err != nil || res.Stdout != "alive\n" {
		t.Fatalf("the user sandbox did not survive the restart: %v %+v", err, res)
	}
	out, code := s.cli("", "teardown", "--data-dir", s.dataDir)
	if code == 0 || !strings.Contains(out, "server is running") {
		t.Errorf("teardown under a running server: exit %d, %q; want it refused", code, out)
	}
	if res, err := c.Exec(ctx, kept.ID, client.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
		t.Errorf("a refused teardown touched the sandbox: %v %+v", err, res)
	}
	s.stop()
	out, code = s.cli("", "teardown", "--data-dir", s.dataDir)
	if code != 0 || !strings.Contains(out, "torn down") {
		t.Fatalf("teardown: exit %d, %q", code, out)
	}
	if err := leftIn(s.dataDir, true); err != nil {
		t.Errorf("after teardown: %v", err)
	}
}

// waitPoolBooted waits until s's warm pool holds a booted sandbox.
func waitPoolBooted(t *testing.T, s *server) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		states, _ := filepath.Glob(filepath.Join(s.dataDir, "sandboxes", "pool-*", "state.json"))
		if len(states) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the warm pool never booted a sandbox")
		}
	}
}

// leftIn says what of the data dir's sandboxes is left: directories, held
// uid ranges, processes of those, mounts (the disk pool too, when
// unmounted is set) and loop devices on its image.
func leftIn(dataDir string, unmounted bool) error {
	var problems []string
	sbDir := filepath.Join(dataDir, "sandboxes")
	entries, _ := os.ReadDir(sbDir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.IsDir() {
			problems = append(problems, "directory "+e.Name())
		}
	}
	slots := hostSlots()
	for _, sl := range slots {
		if sl.held && filepath.Dir(sl.dir) == sbDir {
			problems = append(problems, fmt.Sprintf("uid range %d held for %s", sl.n, filepath.Base(sl.dir)))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dataDir+"/") && (unmounted || f[4] != sbDir) {
			problems = append(problems, "mount "+f[4])
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		loops := loopsOn(sbDir + ".img")
		if !unmounted || loops == 0 {
			break
		}
		if time.Now().After(deadline) {
			problems = append(problems, fmt.Sprintf("%d loop devices on the disk pool's image", loops))
			break
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// loopsOn counts the loop devices whose backing file is img.
func loopsOn(img string) int {
	n := 0
	backing, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range backing {
		if f, _ := os.ReadFile(b); strings.TrimSuffix(strings.TrimSpace(string(f)), " (deleted)") == img {
			n++
		}
	}
	return n
}
