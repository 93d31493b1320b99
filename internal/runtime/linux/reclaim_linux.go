package linux

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
)

// reap destroys what earlier processes left behind: sandboxes whose init
// is dead (a crashed `airlock run`, an agent killed by the kernel), and
// sandboxes never handed out whose creator is gone: directories without a
// state file (a daemon killed mid-create), sandboxes booted but not yet
// bound to an id, unclaimed pool sandboxes of an owner that is gone. A
// sandbox another live process is creating, or whose init lives, is not
// touched, so several processes may share a state dir. unclaimed says this
// process has just become the pool owner: for a rootless runtime, which
// keeps no registry, that is how it knows the pool's leftovers are
// abandoned.
func (r *Runtime) reap(unclaimed bool) {
	entries, _ := os.ReadDir(r.sandboxesDir())
	legacy := r.legacySlotsDir()
	var slots map[string]slotEntry
	abandoned := func(name string) bool {
		if slots == nil && !r.rootless {
			slots = scanSlots()
		}
		return r.abandoned(name, slots, unclaimed)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || r.ours(name) {
			continue
		}
		sb, err := r.attach(name)
		if errors.Is(err, runtime.ErrNotFound) {
			if abandoned(name) {
				r.reclaimStateless(name, slots)
			}
			continue
		}
		if err != nil {
			continue
		}
		dead := sb.p.Pid > 0 && !procAlive(sb.p.Pid, sb.p.Start)
		if dead || sb.p.ID == "" && abandoned(name) {
			sb.destroy()
		} else if legacy != "" && sb.p.Slot >= 0 {
			adoptSlot(sb.p.Slot, sb.dir, sb.p.Pid, sb.p.Start)
		}
	}
	if legacy != "" {
		// Every live sandbox's range is in the host-wide registry now.
		os.RemoveAll(legacy)
	}
	r.removeDanglingIDs()
	if !r.rootless {
		removeOrphanGroups()
	}
}

// removeOrphanGroups removes the sandbox cgroups on the host, whatever data
// dir made them, whose uid range nobody holds for them: a daemon killed
// mid-create, or before its warm pool was destroyed, whose data dir was
// then removed, left groups no reclaimer of its own would find. A group is
// named after its range ("<slot>-<sandbox>"), made after the range was
// claimed and removed before it is released, so a group whose range is
// free, or held for another sandbox, belongs to no live sandbox: its init,
// which holds the range while any process of it lives, is gone.
func removeOrphanGroups() {
	for _, g := range cgroups.Find("") {
		k, _, ok := strings.Cut(g, "-")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || n < 0 || n >= maxSlots {
			continue
		}
		held.Lock()
		mine := held.m[n]
		held.Unlock()
		if mine {
			continue
		}
		ent, err := inspectSlot(n)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if (ent.locked || ent.rec.initAlive()) && cgroupName(n, filepath.Base(ent.rec.Dir)) == g {
			continue
		}
		if c, err := cgroups.Open(g); err == nil {
			if procs, err := c.Procs(); err == nil && len(procs) == 0 {
				c.Destroy()
			}
		}
	}
}

// removeDanglingIDs removes the ids whose sandbox directory is gone: a
// creator that died between binding the id and saving it in the state
// file left a sandbox that was destroyed without it. A live create binds
// its id only once its directory exists, so no link it needs is touched.
func (r *Runtime) removeDanglingIDs() {
	ids, _ := os.ReadDir(r.idsDir())
	for _, e := range ids {
		link := filepath.Join(r.idsDir(), e.Name())
		name, err := os.Readlink(link)
		if err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.sandboxesDir(), name)); errors.Is(err, os.ErrNotExist) {
			os.Remove(link)
		}
	}
}

// creating is the set of sandbox directories this process is booting, in
// any of its runtimes: the registry names this process as their claimer,
// and only this set tells them from ones this process abandoned.
var creating = dirSet{m: map[string]bool{}}

type dirSet struct {
	sync.Mutex
	m map[string]bool
}

func (s *dirSet) add(dir string) {
	s.Lock()
	s.m[dir] = true
	s.Unlock()
}

func (s *dirSet) remove(dir string) {
	s.Lock()
	delete(s.m, dir)
	s.Unlock()
}

func (s *dirSet) has(dir string) bool {
	s.Lock()
	defer s.Unlock()
	return s.m[dir]
}

// ours says whether this process is booting the sandbox in directory
// name or this runtime holds it live: a sweep leaves those alone.
func (r *Runtime) ours(name string) bool {
	if creating.has(filepath.Join(r.sandboxesDir(), name)) {
		return true
	}
	if r.pool.has(name) {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sb := range r.live {
		if sb.p.Name == name {
			return true
		}
	}
	return false
}

// abandoned says whether the sandbox in directory name, not handed out
// yet, was left by a creator that is gone. As root the registry says it:
// the uid range is claimed before the directory exists, by a record
// naming the claimer, so a sandbox whose claimer is another live process
// is being created and any other is abandoned, whatever its age (this
// process's own creates and pool are skipped before). Rootless runtimes
// claim no ranges (and their inits die with their creator): age decides
// for them, or being a pool sandbox found by a new pool owner.
func (r *Runtime) abandoned(name string, slots map[string]slotEntry, unclaimed bool) bool {
	if !r.rootless {
		ent, ok := slots[filepath.Join(r.sandboxesDir(), name)]
		return !ok || !ent.rec.claimerAlive() || ent.rec.Claimer == os.Getpid()
	}
	if unclaimed && strings.HasPrefix(name, poolPrefix) {
		return true
	}
	info, err := os.Stat(filepath.Join(r.sandboxesDir(), name))
	return err == nil && time.Since(info.ModTime()) > abandonedAfter
}

// abandonedAfter is the age past which a rootless sandbox directory without
// a state file is taken for one whose creator died.
const abandonedAfter = time.Minute

// reclaimStateless destroys a sandbox directory that has no state file,
// its creator having died mid-create. Its processes are found by the
// init the registry recorded, by its cgroup, and, when its creator died
// after cloning the init but before recording or placing it, by the uid
// range whose lock the init still holds.
func (r *Runtime) reclaimStateless(name string, slots map[string]slotEntry) error {
	dir := filepath.Join(r.sandboxesDir(), name)
	p := persisted{Name: name, Slot: -1}
	ent, ok := slots[dir]
	if ok {
		p.Slot, p.Pid, p.Start = ent.n, ent.rec.Init, ent.rec.InitStart
	} else {
		p.Slot = legacySlotOwnedBy(r.cfg.StateDir, name)
	}
	sb := newSandbox(r, p, dir)
	for _, cg := range cgroupsOf(p.Slot, name) {
		if c, err := cgroups.Open(cg); err == nil {
			sb.cg = c
			break
		}
	}
	if ok && ent.locked && !ent.rec.initAlive() {
		killUnrecordedInit(ent.n, dir)
	}
	return sb.destroy()
}

// cgroupsOf lists the groups that may be a stateless sandbox's: the one
// named after its uid range, or, when the range is unknown, any group
// ending in its name, and the name alone (sandboxes made before groups
// were named after ranges).
func cgroupsOf(slot int, name string) []string {
	if slot >= 0 {
		return []string{cgroupName(slot, name), name}
	}
	return append(cgroups.Find("-"+name), name)
}

// killUnrecordedInit kills the processes of uid range n while slot n's
// record still names dir and its lock is held: then the holder can only be
// that sandbox's init, cloned by a creator that died before it recorded
// it. Each process is pinned by a pidfd before the record is read again,
// so a range handed to another sandbox in between is never touched.
func killUnrecordedInit(n int, dir string) {
	for range 50 {
		var fds []int
		for _, pid := range slotProcesses(n) {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				fds = append(fds, fd)
			}
		}
		ent, err := inspectSlot(n)
		still := err == nil && ent.locked && ent.rec.Dir == dir
		for _, fd := range fds {
			if still {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		if !still {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sweeper runs reap, and collects unused template layers, every interval
// until Close.
func (r *Runtime) sweeper(every time.Duration) {
	defer close(r.sweepDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.sweepStop:
			return
		case <-t.C:
			r.reap(false)
			// A destroy skips collecting template layers while another
			// sandbox is being created (its layer is not known yet): the
			// sweep collects what such a destroy left.
			r.collectTemplates()
		}
	}
}

// legacySlotsDir is the per-data-dir slot registry of earlier versions, if
// this state dir still has one.
func (r *Runtime) legacySlotsDir() string {
	d := filepath.Join(r.cfg.StateDir, "slots")
	if _, err := os.Stat(d); err != nil {
		return ""
	}
	return d
}

// legacySlotOwnedBy returns the slot an earlier version claimed in the
// state dir for the sandbox named name, -1 if none.
func legacySlotOwnedBy(stateDir, name string) int {
	root := filepath.Join(stateDir, "slots")
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(root, e.Name(), "owner")); err == nil && string(b) == name {
			return n
		}
	}
	return -1
}
