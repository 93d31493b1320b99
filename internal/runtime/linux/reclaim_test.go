package linux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// halfBoot boots a sandbox in r and removes its state file, as if its
// creator had died between starting the init and saving its state; then
// rec, when set, rewrites the registry record the way the creator left it.
func halfBoot(t *testing.T, r *Runtime, name string, rec func(*slotRecord)) *sandbox {
	t.Helper()
	dir := filepath.Join(r.sandboxesDir(), name)
	creating.add(dir)
	sb, err := r.boot(context.Background(), name, runtime.Limits{}.WithDefaults(), defaultHostname, layering{})
	creating.remove(dir) // and so its creator is gone
	if err != nil {
		t.Fatal(err)
	}
	sb.slot.f.Close() // its copy of the range's lock with it
	sb.slot.f = nil
	// Whatever the test finds, no init of it outlives it.
	t.Cleanup(func() {
		if procAlive(sb.p.Pid, sb.p.Start) {
			syscall.Kill(sb.p.Pid, syscall.SIGKILL)
		}
	})
	if err := os.Remove(filepath.Join(sb.dir, stateFile)); err != nil {
		t.Fatal(err)
	}
	if sb.cg == nil {
		t.Fatal("no cgroup: a half-booted sandbox cannot be found")
	}
	if rec != nil {
		f, err := os.OpenFile(slotPath(sb.slot.n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, _ := readRecord(f)
		rec(&r)
		if err := writeRecord(f, r); err != nil {
			t.Fatal(err)
		}
	}
	return sb
}

// reclaimed fails t unless every trace of sb is gone: init, directory,
// uid range claim, cgroup.
func reclaimed(t *testing.T, sb *sandbox) {
	t.Helper()
	if procAlive(sb.p.Pid, sb.p.Start) {
		t.Errorf("%s: init %d still runs", sb.p.Name, sb.p.Pid)
	}
	if _, err := os.Stat(sb.dir); err == nil {
		t.Errorf("%s: directory left", sb.p.Name)
	}
	// (The range may be another sandbox's by now: tests of other
	// packages create sandboxes at the same time.)
	if ent, err := inspectSlot(sb.slot.n); err == nil && ent.rec.Dir == sb.dir {
		t.Errorf("%s: uid range %d still claimed: %+v", sb.p.Name, sb.slot.n, ent)
	}
	if _, err := cgroups.Open(sb.p.CgroupName); err == nil {
		t.Errorf("%s: cgroup %s left", sb.p.Name, sb.p.CgroupName)
	}
}

// TestReclaimCrashMidCreate pins the leak a daemon killed with creates in
// flight left behind (live inits, directories, cgroups, and an init
// outside any cgroup whose range was already handed back): the next
// runtime on the state dir reclaims every sandbox directory without state
// whose creator is gone, whatever its age, and leaves alone one whose
// creator still lives.
func TestReclaimCrashMidCreate(t *testing.T) {
	linuxtest.Require(t)
	state := linuxtest.StateDir(t)
	r, err := New(Config{StateDir: state, Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Teardown()
	// A live process that is not this one, standing for another daemon
	// still creating a sandbox.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	otherStart := procStart(other.Process.Pid)

	dead := func(rec *slotRecord) { rec.Claimer, rec.ClaimerStart = 0, 0 }
	pooled := halfBoot(t, r, poolPrefix+"halfboot", dead)
	cold := halfBoot(t, r, "halfboot-cold", dead)
	// Its creator died after the clone, before it recorded the init or
	// placed it in a cgroup: only the uid range's lock, which the init
	// inherited, marks it.
	unrecorded := halfBoot(t, r, "halfboot-unrecorded", func(rec *slotRecord) {
		dead(rec)
		rec.Init, rec.InitStart = 0, 0
	})
	moveToRoot(t, unrecorded.p.Pid)
	if err := unrecorded.cg.Destroy(); err != nil {
		t.Fatalf("remove the cgroup of the unrecorded init: %v", err)
	}
	if !procAlive(unrecorded.p.Pid, unrecorded.p.Start) {
		t.Fatal("the unrecorded init died with its cgroup: it was not moved out")
	}
	inFlight := halfBoot(t, r, "halfboot-inflight", func(rec *slotRecord) {
		rec.Claimer, rec.ClaimerStart = other.Process.Pid, otherStart
	})

	r2, err := New(Config{StateDir: state, Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range []*sandbox{pooled, cold, unrecorded} {
		reclaimed(t, sb)
	}
	if !procAlive(inFlight.p.Pid, inFlight.p.Start) {
		t.Error("a sandbox another live process is creating was reclaimed")
	}
	other.Process.Kill()
	other.Wait()
	r2.reap(false)
	reclaimed(t, inFlight)
}

// moveToRoot takes pid out of its sandbox's groups, into each hierarchy's
// root group, as if it had never been placed.
func moveToRoot(t *testing.T, pid int) {
	t.Helper()
	info, err := cgroups.Detect()
	if err != nil {
		t.Fatal(err)
	}
	roots := []string{}
	for _, m := range info.Controllers {
		roots = append(roots, m)
	}
	if info.Unified != "" {
		roots = append(roots, info.Unified)
	}
	for _, root := range roots {
		if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Logf("move %d to %s: %v", pid, root, err)
		}
	}
	time.Sleep(10 * time.Millisecond)
}

// TestRangeHeldUntilSandboxIsGone pins a window of the registry: a
// daemon destroying a sandbox an earlier daemon created (whose only copy
// of the range's lock is its init's) let the range go free when the init
// died, while its cgroup, disk limit (the project id is the range's) and
// files were still being removed, so another sandbox could take the
// range and then lose its disk limit to the old one's cleanup. The
// destroyer takes the init's copy of the lock back first.
func TestRangeHeldUntilSandboxIsGone(t *testing.T) {
	linuxtest.Require(t)
	var sb *sandbox
	var checked []string
	var dir string
	trace := func(phase string, _ time.Duration) {
		if sb == nil || (phase != "destroy: remove cgroup" && phase != "destroy: remove files") {
			return
		}
		ent, err := inspectSlot(sb.slot.n)
		if err != nil || !ent.locked || ent.rec.Dir != dir {
			t.Errorf("after %q: range %d is free (%+v, %v) while the sandbox is not gone", phase, sb.slot.n, ent, err)
		}
		checked = append(checked, phase)
	}
	r, err := New(Config{StateDir: linuxtest.StateDir(t), Binary: linuxtest.Init(t), Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Teardown()
	booted, err := r.Create(context.Background(), runtime.Spec{ID: "held-range"})
	if err != nil {
		t.Fatal(err)
	}
	first := booted.(*sandbox)
	// The daemon that created it is gone: its copy of the lock with it.
	first.slot.f.Close()
	first.slot.f = nil
	dir = first.dir
	if ent, err := inspectSlot(first.slot.n); err != nil || !ent.locked {
		t.Fatalf("the init does not hold its range's lock: %+v %v", ent, err)
	}
	r.forget(first.p.ID)
	got, err := r.attach(first.p.Name)
	if err != nil {
		t.Fatal(err)
	}
	sb = got
	if sb.proc != nil || sb.slot.f != nil {
		t.Fatal("attached a sandbox as its creator")
	}
	if err := sb.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(checked) != 2 {
		t.Fatalf("checked after %v, not after both cleanup phases", checked)
	}
	if ent, err := inspectSlot(sb.slot.n); err == nil && ent.rec.Dir == dir {
		t.Errorf("range %d still claimed after the destroy: %+v", sb.slot.n, ent)
	}
}

// A daemon killed before it destroyed its warm pool, whose data dir was
// removed after it, left empty cgroups that no reclaimer of its own data
// dir could find, and that a later crash test took for leaks. Any daemon's
// sweep removes a sandbox group whose uid range nobody holds for it, and
// keeps one whose range is held for its sandbox, by whatever process.
func TestOrphanGroupsRemovedHostWide(t *testing.T) {
	linuxtest.Require(t)
	if err := mkSlotDir(); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	claim := func(name string) slot {
		s, err := claimSlot(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	group := func(name string) {
		c, err := cgroups.New(name, runtime.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Destroy() })
	}
	exists := func(name string) bool {
		c, err := cgroups.Open(name)
		return err == nil && c != nil
	}
	// A range held for its sandbox, as if by another process.
	kept := claim("kept")
	defer kept.release(filepath.Join(base, "kept"))
	held.Lock()
	delete(held.m, kept.n)
	held.Unlock()
	// A range given back, whose sandbox's group was left behind.
	freed := claim("freed")
	freed.release(filepath.Join(base, "freed"))
	group(cgroupName(kept.n, "kept"))
	group(cgroupName(kept.n, "earlier")) // the range's earlier sandbox
	group(cgroupName(freed.n, "freed"))
	removeOrphanGroups()
	if !exists(cgroupName(kept.n, "kept")) {
		t.Errorf("the group of a sandbox whose range is held was removed")
	}
	for _, g := range []string{cgroupName(kept.n, "earlier"), cgroupName(freed.n, "freed")} {
		if exists(g) {
			t.Errorf("orphan group %s is still there", g)
		}
	}
}
