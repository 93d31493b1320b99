package agent

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// trackInterval is how often live process trees are re-scanned. A
// descendant seen once stays attributed to its tree after its parent exits,
// which is how a double-forked daemon whose middle process lived at least
// this long is still killed with its tree.
const trackInterval = 100 * time.Millisecond

// procStat is the part of /proc/<pid>/stat the tree logic needs.
type procStat struct {
	ppid, pgid, sid int
	start           uint64 // boot ticks; tells a pid apart from its reuse
	zombie          bool
}

// scanProcs reads every process's stat. Processes vanishing mid-scan are
// skipped: they are gone, which is what the caller wants to know.
func scanProcs() map[int]procStat {
	out := map[int]procStat{}
	d, err := os.Open("/proc")
	if err != nil {
		return out
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		if st, ok := parseStat(b); ok {
			out[pid] = st
		}
	}
	return out
}

// parseStat parses /proc/<pid>/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return procStat{}, false
	}
	var st procStat
	var err error
	st.zombie = f[0][0] == 'Z' || f[0][0] == 'X'
	if st.ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return procStat{}, false
	}
	if st.pgid, err = strconv.Atoi(string(f[2])); err != nil {
		return procStat{}, false
	}
	if st.sid, err = strconv.Atoi(string(f[3])); err != nil {
		return procStat{}, false
	}
	if st.start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return procStat{}, false
	}
	return st, true
}

// tree is the set of processes one exec started, directly or not. The root
// is a session and group leader (Setsid), so group and session members
// belong too; descendants that called setsid are found by parent links.
type tree struct {
	root    int
	marker  string         // value of markerVar in the tree's environment
	members map[int]uint64 // pid -> start time
}

// expand adds processes of procs that belong to t and drops members that
// are gone. It reports whether it added any.
func (t *tree) expand(procs map[int]procStat) bool {
	if st, ok := procs[t.root]; ok && len(t.members) == 0 {
		t.members[t.root] = st.start
	}
	for pid, start := range t.members {
		if st, ok := procs[pid]; !ok || st.start != start {
			delete(t.members, pid)
		}
	}
	added := false
	for grew := true; grew; {
		grew = false
		for pid, st := range procs {
			if _, ok := t.members[pid]; ok {
				continue
			}
			pstart, parentIn := t.members[st.ppid]
			if st.pgid == t.root || st.sid == t.root || (parentIn && st.start >= pstart) {
				t.members[pid] = st.start
				grew, added = true, true
			}
		}
	}
	return added
}

// live returns the members that are still running (not zombies).
func (t *tree) live(procs map[int]procStat) []int {
	var pids []int
	for pid := range t.members {
		if st, ok := procs[pid]; ok && !st.zombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// tracker remembers the lineage of every running exec's tree.
type tracker struct {
	mu    sync.Mutex
	trees map[*tree]struct{}
	// busy wakes run when a tree is added: an agent with nothing running
	// keeps no ticker, so an idle sandbox costs the host no wake-ups (500
	// idle agents ticking 10 times a second slowed every exec among them).
	busy chan struct{}
	// marked returns the processes whose environment carries a marker, with
	// their start times; nil skips that search.
	marked func(marker string) map[int]uint64
	// childless reports that the agent has no child at all; nil when that
	// says nothing of the trees (see childless).
	childless func() bool
}

func newTracker() *tracker {
	return &tracker{trees: map[*tree]struct{}{}, busy: make(chan struct{}, 1)}
}

func (tr *tracker) add(root int, marker string) *tree {
	t := &tree{root: root, marker: marker, members: map[int]uint64{}}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.trees[t] = struct{}{}
	select {
	case tr.busy <- struct{}{}:
	default:
	}
	return t
}

func (tr *tracker) remove(t *tree) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.trees, t)
}

func (tr *tracker) run(stop <-chan struct{}) {
	tick := time.NewTicker(trackInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		tr.mu.Lock()
		busy := len(tr.trees) > 0
		tr.mu.Unlock()
		if !busy {
			// Nothing to track: no ticks until a tree comes.
			tick.Stop()
			select {
			case <-stop:
				return
			case <-tr.busy:
			}
			tick.Reset(trackInterval)
			continue
		}
		procs := scanProcs()
		tr.mu.Lock()
		for t := range tr.trees {
			t.expand(procs)
		}
		tr.mu.Unlock()
	}
}

// kill kills every process of t. Each round first freezes the tree with
// SIGSTOP until a scan finds nothing new, so a fork loop cannot create
// children faster than they are found, then SIGKILLs all of it; rounds
// repeat until a scan finds no live member. It gives up after a bound so a
// process stuck in the kernel cannot hang the agent.
func (tr *tracker) kill(t *tree) {
	if tr.childless != nil && tr.childless() {
		// The common end of a command: it exited, was reaped, and left
		// nothing behind. No scan of /proc needed to know.
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for round := 0; round < 200; round++ {
		unix.Kill(-t.root, unix.SIGSTOP)
		procs := scanProcs()
		for {
			t.expand(procs)
			stopped := t.live(procs)
			for _, pid := range stopped {
				unix.Kill(pid, unix.SIGSTOP)
			}
			// A member stopped just now may have forked before the stop
			// landed: look again. With none left running (the common end
			// of a command: its one process exited and was reaped) there
			// is nothing that could have forked.
			if len(stopped) > 0 {
				procs = scanProcs()
			}
			grew := t.expand(procs)
			// A daemon whose middle process exited before any scan saw
			// it has lost every link to the tree but still carries the
			// tree's environment marker. Only a process outside the tree
			// can be one: with none, there is nothing to read the
			// environment of.
			if tr.marked != nil && t.marker != "" && strangers(procs, t) {
				for pid, start := range tr.marked(t.marker) {
					if _, ok := t.members[pid]; !ok {
						t.members[pid], grew = start, true
						unix.Kill(pid, unix.SIGSTOP)
					}
				}
				procs = scanProcs()
			}
			if !grew {
				break
			}
		}
		live := t.live(procs)
		if len(live) == 0 {
			return
		}
		for _, pid := range live {
			unix.Kill(pid, unix.SIGKILL)
		}
		unix.Kill(-t.root, unix.SIGKILL)
		time.Sleep(time.Duration(round+1) * time.Millisecond)
	}
}

// childless reports whether this process has no child, running or not.
// For an agent that reaps (PID 1 of the sandbox, or a child subreaper)
// every process a command started descends from it: orphans are
// reparented to it, or to a subreaper that itself descends from it. So
// with no child there is no process of any tree left to kill.
func childless() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	return err == unix.ECHILD
}

// strangers says whether procs holds a running process other than the
// agent and t's members: one that might carry t's marker.
func strangers(procs map[int]procStat, t *tree) bool {
	self := os.Getpid()
	for pid, st := range procs {
		if _, member := t.members[pid]; !member && pid != self && !st.zombie {
			return true
		}
	}
	return false
}
