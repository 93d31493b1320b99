package linux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// TestWarmPool claims a pooled sandbox and checks that the create request's
// limits, environment and workdir apply to it, and that the pool refills.
func TestWarmPool(t *testing.T) {
	linuxtest.Require(t)
	state := linuxtest.StateDir(t)
	r, err := New(Config{StateDir: state, Binary: linuxtest.Init(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	waitPool := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			r.pool.mu.Lock()
			n := len(r.pool.ready)
			r.pool.mu.Unlock()
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool never filled (%d boot errors, last: %v)", r.pool.errs, r.pool.lastErr)
			}
		}
	}
	waitPool()
	// Waiting in the pool, the init runs at the lowest priority...
	r.pool.mu.Lock()
	pooled := r.pool.ready[0].p.Pid
	r.pool.mu.Unlock()
	if pol := schedPolicies(t, pooled); len(pol) != 1 || pol[0] != sbinit.IdleNice {
		t.Errorf("nice values of a pooled init's threads: %v, want all %d", pol, sbinit.IdleNice)
	}
	// ... in a group as light as a nice-19 process: nice values only rank
	// threads within their group.
	if w := cpuWeight(t, pooled); w != "15" && w != "nice 19" && w != "1" {
		t.Errorf("CPU weight of a pooled sandbox's group: %s, want nice 19's", w)
	}
	ctx := context.Background()
	sb, err := r.Create(ctx, runtime.Spec{ID: "pooled", Limits: runtime.Limits{MemoryMB: 64, Pids: 40}, Env: map[string]string{"X": "from-spec"}, Workdir: "/home/user/w"})
	if err != nil {
		t.Fatal(err)
	}
	if name := sb.(*sandbox).p.Name; !strings.HasPrefix(name, poolPrefix) {
		t.Fatalf("sandbox %s was not taken from the pool", name)
	}
	if out, _ := shOut(t, sb, "echo $X $(pwd) $(id -u)"); out != "from-spec /home/user/w 1000" {
		t.Errorf("env, workdir, user: %q", out)
	}
	// ... and handed out, it and its commands run at the default, as a
	// cold sandbox's do.
	if pol := schedPolicies(t, pooled); len(pol) != 1 || pol[0] != 0 {
		t.Errorf("nice values of a claimed init's threads: %v, want all 0", pol)
	}
	if w := cpuWeight(t, pooled); w != "1024" && w != "nice 0" && w != "100" {
		t.Errorf("CPU weight of a claimed sandbox's group: %s, want the default", w)
	}
	if out, _ := shOut(t, sb, `python3 -c 'import os; print(os.sched_getscheduler(0), os.nice(0))'`); out != "0 0" {
		t.Errorf("a command's scheduling policy and nice value in a claimed sandbox: %q, want 0 0", out)
	}
	// The request's 64 MiB replaced the pool's default limit.
	if _, st := shOut(t, sb, `python3 -c 'a = b"a" * (256 << 20)'`); !st.OOMKilled {
		t.Errorf("256 MiB allocation under a 64 MiB limit: %+v", st)
	}
	// And its 40 pids: its commands' group holds them and the fork thread.
	if tasks := sb.(*sandbox).cg.CommandTasks(); tasks != "" {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(tasks), "pids.max")); err != nil || strings.TrimSpace(string(b)) != "41" {
			t.Errorf("pids.max of a claimed sandbox's commands: %q (%v), want 41", b, err)
		}
	}
	if ids, _ := r.List(ctx); len(ids) != 1 || ids[0] != "pooled" {
		t.Errorf("List = %v, want [pooled]", ids)
	}
	if _, err := r.Create(ctx, runtime.Spec{ID: "pooled"}); err == nil {
		t.Errorf("a second sandbox with the same id was created")
	}
	waitPool()
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "pooled"); err == nil {
		t.Errorf("Get after destroy succeeded")
	}
}

func shOut(t *testing.T, sb runtime.Sandbox, script string) (string, runtime.ExitStatus) {
	t.Helper()
	var out bytes.Buffer
	st, err := sb.Exec(context.Background(), runtime.ExecRequest{Shell: script, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String()), st
}

// schedPolicies lists the distinct nice values of pid's threads, all of
// which must be SCHED_OTHER.
// cpuWeight reads the CPU weight of the cgroup of pid: cpu.shares (v1),
// "nice N" from cpu.weight.nice or else cpu.weight (v2).
func cpuWeight(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !slices.Contains(strings.Split(parts[1], ","), "cpu") {
			continue
		}
		for _, mnt := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"} {
			if b, err := os.ReadFile(filepath.Join(mnt, parts[2], "cpu.shares")); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			dir := filepath.Join("/sys/fs/cgroup", rel)
			if b, err := os.ReadFile(filepath.Join(dir, "cpu.weight.nice")); err == nil {
				return "nice " + strings.TrimSpace(string(b))
			}
			if b, err := os.ReadFile(filepath.Join(dir, "cpu.weight")); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
	}
	t.Fatalf("no CPU weight for the cgroup of %d: %s", pid, data)
	return ""
}

func schedPolicies(t *testing.T, pid int) []int32 {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	var out []int32
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // exited
		}
		if a.Policy != unix.SCHED_NORMAL {
			t.Errorf("thread %d has scheduling policy %d, want SCHED_OTHER", tid, a.Policy)
		}
		if !seen[a.Nice] {
			seen[a.Nice] = true
			out = append(out, a.Nice)
		}
	}
	return out
}

// TestPoolTarget: the pool holds its size when creates are rare, as many
// as were claimed in the last second when they come fast (up to its
// maximum), and gives back the extra ones after a quiet spell.
func TestPoolTarget(t *testing.T) {
	now := time.Now()
	ago := func(d ...time.Duration) []time.Time {
		var out []time.Time
		for _, x := range d {
			out = append(out, now.Add(-x))
		}
		return out
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		takes      []time.Time
		ready      int
		want       int
		wantShrink bool
	}{
		{"no claims", nil, 2, 2, false},
		{"a claim a minute ago", ago(time.Minute), 2, 2, false},
		{"five in the last second", ago(900*ms, 700*ms, 500*ms, 300*ms, 100*ms), 2, 5, false},
		{"a burst past the maximum", ago(make([]time.Duration, 50)...), 2, 8, false},
		{"grown, then quiet", ago(time.Minute, time.Minute), 6, 2, true},
		{"grown, still busy", ago(10*ms, 5*ms), 6, 2, false},
	} {
		p := &pool{size: 2, max: 8, takes: tc.takes, ready: make([]*sandbox, tc.ready)}
		got, shrink := p.target(now)
		if got != tc.want || shrink != tc.wantShrink {
			t.Errorf("%s: target %d (shrink %v), want %d (%v)", tc.name, got, shrink, tc.want, tc.wantShrink)
		}
	}

	// The peak of a burst is held, so that the next one like it finds the
	// pool grown; past its hold, and quiet, the pool shrinks back.
	p := &pool{size: 2, max: 8}
	burst := now.Add(-time.Minute)
	for i := range 6 {
		p.demand(burst.Add(time.Duration(i) * ms)) // creates that found it empty count
	}
	if p.peak != 6 {
		t.Fatalf("peak after a burst of 6: %d", p.peak)
	}
	p.ready = make([]*sandbox, 6)
	if got, shrink := p.target(now); got != 6 || shrink {
		t.Errorf("a minute after a burst of 6: target %d (shrink %v), want 6, kept", got, shrink)
	}
	later := burst.Add(peakHold + time.Second)
	if got, shrink := p.target(later); got != 2 || !shrink {
		t.Errorf("past the hold, quiet: target %d (shrink %v), want 2 and shrinking", got, shrink)
	}
	p.demand(later)
	if p.peak != 1 || p.peakAt != later {
		t.Errorf("the first create past the hold starts a new peak: %d at %v", p.peak, p.peakAt)
	}
	if got, shrink := p.target(later); got != 2 || shrink {
		t.Errorf("past the hold, a create just now: target %d (shrink %v), want 2, kept while busy", got, shrink)
	}
	p = &pool{size: 2, max: 8}
	for range 20 {
		p.demand(now)
	}
	if got, _ := p.target(now); got != 8 {
		t.Errorf("a burst past the maximum: target %d, want 8", got)
	}
}

// poolRuntime is a runtime of its own with a warm pool of size, torn
// down when the test ends.
func poolRuntime(t *testing.T, size int) *Runtime {
	t.Helper()
	linuxtest.Require(t)
	r, err := New(Config{StateDir: linuxtest.StateDir(t), Binary: linuxtest.Init(t), PoolSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	return r
}

// TestPoolLearnsBursts: creates that find the pool empty grow it to the
// size of their burst, so that the next burst like it is served from the
// pool, every create a claim.
func TestPoolLearnsBursts(t *testing.T) {
	r := poolRuntime(t, 1)
	const n = 4
	ctx := context.Background()
	waitFull := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !r.PoolFull(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (%d ready; %d boot errors, last: %v)", what, r.PoolReady(), r.pool.errs, r.pool.lastErr)
			}
		}
	}
	burst := func(round int) (pooled int) {
		t.Helper()
		sbs := make([]runtime.Sandbox, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { sbs[i], errs[i] = r.Create(ctx, runtime.Spec{ID: fmt.Sprintf("burst-%d-%d", round, i)}) })
		}
		wg.Wait()
		for i, sb := range sbs {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if strings.HasPrefix(sb.(*sandbox).p.Name, poolPrefix) {
				pooled++
			}
			if err := sb.Destroy(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return pooled
	}
	waitFull("the pool never filled")
	if got := burst(1); got == n {
		t.Fatalf("all %d creates of the first burst were claims from a pool of 1", got)
	}
	waitFull("the pool did not grow after the burst")
	if got := r.PoolReady(); got != n {
		t.Fatalf("after a burst of %d the pool holds %d", n, got)
	}
	if got := burst(2); got != n {
		t.Errorf("a second burst of %d: %d were claims from the pool, want all", n, got)
	}
}

// TestPoolRefillWaitsForQuiet: while the pool holds at least half of
// what it wants, the refill after a claim waits for the runtime's
// creates, commands and destroys to end (its boot beside them slowed them
// down); a pool below half refills at once, busy or not.
func TestPoolRefillWaitsForQuiet(t *testing.T) {
	linuxtest.Require(t)
	for _, size := range []int{2, 1} {
		t.Run(fmt.Sprintf("pool of %d", size), func(t *testing.T) {
			state := linuxtest.StateDir(t)
			r, err := New(Config{StateDir: state, Binary: linuxtest.Init(t), PoolSize: size})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Teardown(); err != nil {
					t.Errorf("teardown: %v", err)
				}
			}()
			waitFull := func(what string) {
				t.Helper()
				for deadline := time.Now().Add(time.Minute); !r.PoolFull(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s (%d boot errors, last: %v)", what, r.pool.errs, r.pool.lastErr)
					}
				}
			}
			waitFull("the pool never filled")
			// No deadline on the wait for quiet, so that waiting shows.
			r.pool.mu.Lock()
			r.pool.defers = time.Hour
			r.pool.mu.Unlock()
			busy := r.act.begin() // a command of the claimant's, say, still running
			defer busy()
			ctx := context.Background()
			sb, err := r.Create(ctx, runtime.Spec{ID: "claimant"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(sb.(*sandbox).p.Name, poolPrefix) {
				t.Fatal("the create did not take a pooled sandbox")
			}
			if size == 1 {
				waitFull("the empty pool did not refill while the runtime was busy")
			} else {
				// Pool sandboxes keep their directory name once claimed:
				// a third pool- directory is a refill's boot under way.
				for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					entries, err := os.ReadDir(r.sandboxesDir())
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					for _, e := range entries {
						if strings.HasPrefix(e.Name(), poolPrefix) {
							n++
						}
					}
					if n != 2 {
						t.Fatalf("a refill began while the runtime was busy (%d pool directories)", n)
					}
				}
				busy()
				waitFull("the pool did not refill once quiet")
			}
			if err := sb.Destroy(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
