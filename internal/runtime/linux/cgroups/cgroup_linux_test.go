package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/testenv"
)

// hogEnv makes the test binary a memory hog (see TestMain).
const hogEnv = "AIRLOCK_CGROUPS_TEST_HOG"

func TestMain(m *testing.M) {
	if os.Getenv(hogEnv) != "" {
		// Wait for the parent to place us in the group, then touch far more
		// than its memory limit.
		io.ReadAll(os.Stdin)
		b := make([]byte, 512<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requiresCgroups skips a test that needs to create real groups.
func requiresCgroups(t *testing.T) Info {
	t.Helper()
	testenv.RequiresRoot(t, "create cgroups")
	info, err := Detect()
	if err != nil {
		testenv.Unsupported(t, "no cgroup filesystem: "+err.Error())
	}
	if !info.Writable {
		testenv.Lacking(t, "the cgroup hierarchies are not writable")
	}
	return info
}

var seq atomic.Int64

func testName() string {
	return fmt.Sprintf("test-%d-%d", os.Getpid(), seq.Add(1))
}

// newGroup creates a group that is destroyed, and checked gone, when the test
// ends, whatever happened in it.
func newGroup(t *testing.T, info Info, lim runtime.Limits) *Cgroup {
	t.Helper()
	c, err := create(info, testName(), lim)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Destroy(); err != nil {
			t.Errorf("destroy: %v", err)
		}
		for _, d := range c.groups() {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still there after Destroy (stat: %v)", d, err)
			}
		}
	})
	return c
}

// proc is a child process a test started and owns.
type proc struct {
	cmd     *exec.Cmd
	out     bytes.Buffer // stdout and stderr; read only after wait
	stdin   io.Closer
	done    chan struct{}
	waitErr error
}

// start runs a command gated on stdin, so it can be added to a group before
// it does anything; release lets it go. It is killed and reaped when the test
// ends, whatever happened.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.wait()
	})
	return p
}

func (p *proc) pid() int       { return p.cmd.Process.Pid }
func (p *proc) release()       { p.stdin.Close() }
func (p *proc) wait() error    { <-p.done; return p.waitErr }
func (p *proc) output() string { return p.out.String() }

func TestNewRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", "A", "a/b", "..", "a b", strings.Repeat("a", 65)} {
		if _, err := New(name, runtime.Limits{}); !errors.Is(err, runtime.ErrInvalid) {
			t.Errorf("New(%q): got %v, want ErrInvalid", name, err)
		}
	}
}

func TestLimitsAndPlacement(t *testing.T) {
	info := requiresCgroups(t)
	c := newGroup(t, info, runtime.Limits{CPUs: 0.5, MemoryMB: 96, Pids: 40})

	want := map[string]string{} // file -> value read back
	if c.v2("memory") {
		want["memory/memory.max"] = strconv.Itoa(96 << 20)
	} else {
		want["memory/memory.limit_in_bytes"] = strconv.Itoa(96 << 20)
		if exists(c.ctl["memory"], "memory.memsw.limit_in_bytes") {
			want["memory/memory.memsw.limit_in_bytes"] = strconv.Itoa(96 << 20)
		}
	}
	if c.v2("cpu") {
		want["cpu/cpu.max"] = "50000 100000"
	} else {
		want["cpu/cpu.cfs_quota_us"] = "50000"
		want["cpu/cpu.cfs_period_us"] = "100000"
	}
	// The group holds its init's threads beside its commands; the
	// commands' subgroup, where pids is v1, their 40 and the fork thread.
	want["pids/pids.max"] = strconv.Itoa(40 + InitPids)
	if c.cmds != "" {
		want["commands/pids.max"] = "41"
	}
	for key, v := range want {
		ctl, file, _ := strings.Cut(key, "/")
		dir := c.ctl[ctl]
		if ctl == "commands" {
			dir = c.cmds
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != v {
			t.Errorf("%s = %q, want %q", file, got, v)
		}
	}
	if !c.v2("memory") {
		var r reader
		if v := r.key(c.ctl["memory"], "memory.oom_control", "oom_kill_disable"); v != 0 || r.err != nil {
			t.Errorf("oom_kill_disable = %d (%v), want 0", v, r.err)
		}
	}

	p := start(t, "sh", "-c", "read x; exec sleep 1000")
	if err := c.Add(p.pid()); err != nil {
		t.Fatal(err)
	}
	p.release()
	procs, err := c.Procs()
	if err != nil || !slices.Contains(procs, p.pid()) {
		t.Fatalf("Procs = %v, %v; want it to hold %d", procs, err, p.pid())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.pid()))
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasSuffix(line, "/"+Parent+"/"+c.name) {
			in++
		}
	}
	if in != len(c.dirs) {
		t.Errorf("/proc/%d/cgroup shows %d hierarchies in the group, want %d:\n%s", p.pid(), in, len(c.dirs), b)
	}
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Memory and CPU use are checked by TestOOMKillStaysInside, where the
	// workload has run to its end.
	if s.Pids != 1 {
		t.Errorf("Stats = %+v, want 1 pid", s)
	}
}

func TestReuseOnlyWhenEmpty(t *testing.T) {
	info := requiresCgroups(t)
	c := newGroup(t, info, runtime.Limits{})
	p := start(t, "sleep", "1000")
	if err := c.Add(p.pid()); err != nil {
		t.Fatal(err)
	}
	if _, err := create(info, c.name, runtime.Limits{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("create over a busy group: got %v, want ErrInUse", err)
	}
	// The failed create must not have removed the busy group.
	if procs, _ := c.Procs(); !slices.Contains(procs, p.pid()) {
		t.Fatalf("busy group lost its process: %v", procs)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	again, err := create(info, c.name, runtime.Limits{MemoryMB: 64})
	if err != nil {
		t.Fatalf("reuse of the empty group: %v", err)
	}
	opened, err := Open(c.name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opened.dirs, again.dirs) {
		t.Errorf("Open dirs = %v, want %v", opened.dirs, again.dirs)
	}
	if _, err := Open("test-does-not-exist"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Open of a missing group: got %v, want ErrNotFound", err)
	}
}

func TestDestroyIsIdempotent(t *testing.T) {
	info := requiresCgroups(t)
	c := newGroup(t, info, runtime.Limits{})
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := c.Destroy(); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
}

// TestKill runs each kill strategy this host offers against a process that
// detached a grandchild into its own session and one that forks in a loop.
func TestKill(t *testing.T) {
	info := requiresCgroups(t)
	strategies := []struct {
		name      string
		available bool
		info      Info // what create is told about the host
		kill      bool
		freeze    bool
	}{
		{"cgroup.kill", info.Kill, info, true, false},
		{"cgroup.freeze", info.Freeze, info, false, true},
		{"v1 freezer", info.Controllers["freezer"] != "" && info.Controllers["freezer"] != info.Unified, noV2Features(info), false, false},
		{"signals only", true, noFreezer(info), false, false},
	}
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			if !s.available {
				testenv.Unsupported(t, "this host has no "+s.name)
			}
			c := newGroup(t, s.info, runtime.Limits{Pids: 4096})
			c.kill, c.freeze = s.kill, s.freeze

			// The grandchild escapes its parent's session and process group,
			// so only the cgroup still knows it.
			// Its output goes to /dev/null so it does not hold our pipe open.
			launcher := start(t, "sh", "-c", `read x; setsid sh -c 'sleep 1000 >/dev/null 2>&1 & echo $!' & wait`)
			if err := c.Add(launcher.pid()); err != nil {
				t.Fatal(err)
			}
			launcher.release()
			if err := launcher.wait(); err != nil {
				t.Fatalf("launcher: %v: %s", err, launcher.output())
			}
			grandchild, err := strconv.Atoi(strings.TrimSpace(launcher.output()))
			if err != nil {
				t.Fatalf("launcher output %q: %v", launcher.output(), err)
			}
			forker := start(t, "sh", "-c", "read x; exec >/dev/null 2>&1; while :; do sleep 1000 & done")
			if err := c.Add(forker.pid()); err != nil {
				t.Fatal(err)
			}
			forker.release()
			if procs, _ := c.Procs(); !slices.Contains(procs, grandchild) {
				t.Fatalf("grandchild %d not in group: %v", grandchild, procs)
			}

			if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
			if procs, err := c.Procs(); len(procs) != 0 || err != nil {
				t.Errorf("after Kill: procs %v, %v", procs, err)
			}
			if alive(grandchild) {
				t.Errorf("grandchild %d survived Kill", grandchild)
			}
			if err := forker.wait(); !killed(err) {
				t.Errorf("forker: %v, want killed by SIGKILL", err)
			}
		})
	}
}

func noV2Features(info Info) Info {
	info.Kill, info.Freeze = false, false
	return info
}

func noFreezer(info Info) Info {
	info = noV2Features(info)
	info.Controllers = copyMap(info.Controllers)
	delete(info.Controllers, "freezer")
	return info
}

func copyMap(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// alive says whether pid is a process that has not exited; a zombie waiting
// for a reaper we do not control counts as dead.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func TestOOMKillStaysInside(t *testing.T) {
	info := requiresCgroups(t)
	c := newGroup(t, info, runtime.Limits{MemoryMB: 64})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), hogEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := c.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); !killed(err) {
		t.Fatalf("hog: %v, want killed by SIGKILL", err)
	}
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want >= 1", s.OOMKills)
	}
	// The kernel charges in per-CPU batches, so the peak may pass the
	// limit by a few pages before reclaim and the OOM killer act.
	if s.MemoryPeakBytes < 32<<20 || s.MemoryPeakBytes > 65<<20 {
		t.Errorf("MemoryPeakBytes = %d, want about the 64 MiB limit", s.MemoryPeakBytes)
	}
	if s.CPUSeconds <= 0 {
		t.Errorf("CPUSeconds = %v, want > 0", s.CPUSeconds)
	}
}

func TestPidsLimit(t *testing.T) {
	info := requiresCgroups(t)
	const limit = 10
	c := newGroup(t, info, runtime.Limits{Pids: limit})
	// The sleeps write nowhere, so only the shell holds the output pipe.
	p := start(t, "sh", "-c", "read x; i=0; while [ $i -lt 40 ]; do sleep 1000 >/dev/null 2>&1 & i=$((i+1)); done; echo all started")
	if err := c.Add(p.pid()); err != nil {
		t.Fatal(err)
	}
	// Placed as a command: in the commands' subgroup where there is one
	// (as the init's fork thread puts itself), else in the group, which
	// then also holds the init's share.
	most := int64(limit + InitPids)
	if c.CommandTasks() != "" {
		f, err := os.OpenFile(c.CommandTasks(), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(strconv.Itoa(p.pid()))
		f.Close()
		if err != nil {
			t.Fatalf("move the shell into %s: %v", c.CommandTasks(), err)
		}
		most = limit + 1
	}
	p.release()
	err := p.wait()
	if err == nil || strings.Contains(p.output(), "all started") {
		t.Fatalf("40 forks under pids.max=%d succeeded: %v: %s", limit, err, p.output())
	}
	if !strings.Contains(strings.ToLower(p.output()), "fork") {
		t.Errorf("shell output %q does not report the failed fork", p.output())
	}
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.Pids < 1 || s.Pids > most {
		t.Errorf("Pids = %d, want in [1, %d]", s.Pids, most)
	}
}

// TestProcCgroupFormat pins the /proc/<pid>/cgroup shape the placement test
// relies on.
func TestProcCgroupFormat(t *testing.T) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		testenv.Unsupported(t, "no /proc/self/cgroup")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Count(sc.Text(), ":") < 2 {
			t.Errorf("line %q: want id:controllers:path", sc.Text())
		}
	}
}

// BenchmarkLifecycle measures what a sandbox pays for its group: create with
// limits, add a process, kill it, destroy.
func BenchmarkLifecycle(b *testing.B) {
	testenv.RequiresRoot(b, "create cgroups")
	info, err := Detect()
	if err != nil || !info.Writable {
		testenv.Lacking(b, fmt.Sprintf("requires writable cgroups: %v", err))
	}
	for b.Loop() {
		c, err := create(info, testName(), runtime.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if err := c.Add(cmd.Process.Pid); err != nil {
			b.Fatal(err)
		}
		if err := c.Destroy(); err != nil {
			b.Fatal(err)
		}
		cmd.Wait()
	}
}
