package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// TestCrashMidCreateLeaksNothing pins a leak: kill -9 of the daemon with
// 20 creates in flight left 11 live sandbox inits, 17 directories and 17
// cgroups after a restart, and one init outside any cgroup whose uid range
// had already been handed back. Within 10 s of the restart nothing is left
// but what the API lists as running (and the new warm pool).
func TestCrashMidCreateLeaksNothing(t *testing.T) {
	s := startServer(t, "")
	must[client.Tenant](t)(s.admin().CreateTenant(ctx, client.TenantRequest{Name: "crash"}))
	key := must[client.NewKey](t)(s.admin().CreateKey(ctx, "crash", "")).Key
	c := client.New(s.url, key)
	const n = 20
	var wg sync.WaitGroup
	created := make(chan struct{}, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.CreateSandbox(ctx, client.CreateRequest{MemoryMB: 64}); err == nil {
				created <- struct{}{}
			}
		}()
	}
	// Kill it once a few creates are through and the rest are under way.
	for range 5 {
		select {
		case <-created:
		case <-time.After(60 * time.Second):
			t.Fatal("creates did not get through")
		}
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
	wg.Wait()

	s.start()
	c = client.New(s.url, key)
	var last error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if last = leftovers(s, c); last == nil {
			break
		}
		if time.Now().After(deadline) {
			all, _ := c.ListSandboxes(ctx, client.ListOptions{})
			for _, sb := range all.Sandboxes {
				t.Logf("api: %s %s %s", sb.ID, sb.State, sb.Reason)
			}
			ids, _ := os.ReadDir(filepath.Join(s.dataDir, "ids"))
			for _, e := range ids {
				l, _ := os.Readlink(filepath.Join(s.dataDir, "ids", e.Name()))
				t.Logf("ids: %s -> %s", e.Name(), l)
			}
			t.Fatalf("10 s after the restart: %v", last)
		}
	}
	// And the sandboxes it kept are whole.
	page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning}))
	for _, sb := range page.Sandboxes {
		if res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Command: "echo ok"}); err != nil || res.Stdout != "ok\n" {
			t.Errorf("kept sandbox %s: %v %+v", sb.ID, err, res)
		}
	}
}

// hostSlot is one uid range of the host-wide registry as a test sees it.
type hostSlot struct {
	n    int
	dir  string
	held bool // its lock is held, or its recorded init lives
}

func hostSlots() map[int]hostSlot {
	const dir = "/run/airlock/slots"
	entries, _ := os.ReadDir(dir)
	out := map[int]hostSlot{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var rec struct {
			Dir       string `json:"dir"`
			Init      int    `json:"init"`
			InitStart uint64 `json:"init_start"`
		}
		b := make([]byte, 4096)
		k, _ := f.ReadAt(b, 0)
		json.Unmarshal(b[:k], &rec)
		locked := errors.Is(syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
		f.Close()
		out[n] = hostSlot{n: n, dir: rec.Dir, held: locked || rec.Init > 0 && procAlive(rec.Init)}
	}
	return out
}

// procAlive: not gone and not a zombie.
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// leftovers says what is left of s's sandboxes beyond those the API lists
// as running and the warm pool: processes (any host process in a uid range
// no live sandbox holds, or in one held for a sandbox of s that should be
// gone), cgroups, mounts, directories, loop devices and uid range claims.
func leftovers(s *server, c *client.Client) error {
	page, err := c.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning})
	if err != nil {
		return err
	}
	sbDir := filepath.Join(s.dataDir, "sandboxes")
	allowed := map[string]bool{}
	for _, sb := range page.Sandboxes {
		name, err := os.Readlink(filepath.Join(s.dataDir, "ids", sb.ID))
		if err != nil {
			return fmt.Errorf("running sandbox %s has no runtime id: %v", sb.ID, err)
		}
		allowed[name] = true
	}
	var problems []string
	entries, _ := os.ReadDir(sbDir)
	pool := 0
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "."), allowed[name]:
		case strings.HasPrefix(name, "pool-") && pool < 1:
			pool++
			allowed[name] = true // the new warm pool's
		default:
			problems = append(problems, "directory "+name)
		}
	}
	slots := hostSlots()
	mine := map[string]bool{} // sandbox names with a held range
	for _, sl := range slots {
		if !sl.held || filepath.Dir(sl.dir) != sbDir {
			continue
		}
		name := filepath.Base(sl.dir)
		mine[name] = true
		if !allowed[name] {
			problems = append(problems, fmt.Sprintf("uid range %d held for %s", sl.n, name))
		}
	}
	// Other processes on the host (the servers of other tests, a user's
	// server) create and destroy sandboxes meanwhile: a range claimed
	// after the registry was read holds processes and a cgroup when they
	// are listed, so what they show is checked against the registry read
	// again after them too. A range is held from before its cgroup and
	// processes exist until after they are gone.
	procs := sandboxProcesses()
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/airlock/*")
	later := hostSlots()
	heldFor := func(n int, name string) bool {
		for _, snap := range []map[int]hostSlot{slots, later} {
			if sl, ok := snap[n]; ok && sl.held && (name == "" || filepath.Base(sl.dir) == name) {
				return true
			}
		}
		return false
	}
	for pid, uid := range procs {
		if !heldFor((uid-1<<30)/65536, "") {
			problems = append(problems, fmt.Sprintf("process %d (uid %d) in a range nobody holds", pid, uid))
		}
	}
	for _, g := range groups {
		if fi, err := os.Stat(g); err != nil || !fi.IsDir() {
			continue
		}
		k, name, ok := strings.Cut(filepath.Base(g), "-")
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			continue
		}
		if !heldFor(n, name) {
			problems = append(problems, "cgroup "+g)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], s.dataDir+"/") && f[4] != sbDir {
			problems = append(problems, "mount "+f[4])
		}
	}
	if loops := loopsOn(sbDir + ".img"); loops > 1 {
		problems = append(problems, fmt.Sprintf("%d loop devices on the disk pool", loops))
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return errors.New(strings.Join(problems, "; "))
}

// sandboxProcesses maps every host process running as a sandbox uid (at
// or above 2^30) to that uid.
func sandboxProcesses() map[int]int {
	out := map[int]int{}
	names, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			var uid int
			if _, err := fmt.Sscanf(line, "Uid:\t%d", &uid); err == nil {
				if uid >= 1<<30 {
					pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
					out[pid] = uid
				}
				break
			}
		}
	}
	return out
}
