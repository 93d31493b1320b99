package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// Each sandbox gets a uid/gid range of its own, so that uid 1000 in one
// sandbox is a different host user from uid 1000 in any other: a process that
// escaped its mount namespace still could not touch a neighbour's files or
// signal its processes, and per-user kernel limits (inotify instances,
// user-namespace counts, RLIMIT_NPROC) are not shared. Ranges sit far above
// the ids distributions hand out (and above the usual /etc/subuid ranges).
const (
	uidBase  = 1 << 30
	uidCount = 65536
	maxSlots = 16384
)

// slotsDir is the host-wide registry of uid ranges: one file per slot, for
// every Airlock process on the host whatever its data dir (two servers,
// `airlock mcp`'s embedded daemon, `airlock run`, tests). A registry per
// data dir let two servers hand the same range to sandboxes of different
// tenants, whose per-uid kernel limits then crossed servers (one sandbox
// used up fs.inotify.max_user_instances and another server's sandbox got
// EMFILE). /run is per boot, as the claims are. The slot also names the
// sandbox's cgroup and its ext4 project id, so those are unique host-wide
// too.
var slotsDir = "/run/airlock/slots"

// A slot file is flock'd by whoever holds the range: the claiming process
// from the claim until the sandbox is destroyed, and the init, which
// inherits the locked file at the clone and keeps it for life (both hold
// one open file, so one lock). A daemon that dies leaves the lock with the
// init; the daemon that destroys the sandbox later takes the init's copy
// back first (pidfd_getfd), so that the range stays held from the init's
// death until its cgroup, disk limit and files are gone: a range handed out
// in between would have given the next sandbox the same project id while
// the old one's limit was being cleared. The record in it names the
// sandbox's directory, the claimer and the init. A range is free only when
// its lock can be taken *and* the recorded init is not alive: the kernel
// drops an exiting init's locks before it has killed the rest of its pid
// namespace, and the init's pid alone stays alive (not a zombie) until
// every process of the sandbox is gone. So a range is never handed out
// while a process of it lives.
type slotRecord struct {
	Dir          string `json:"dir"`
	Claimer      int    `json:"claimer"`
	ClaimerStart uint64 `json:"claimer_start"`
	Init         int    `json:"init,omitempty"`
	InitStart    uint64 `json:"init_start,omitempty"`
}

func (rec slotRecord) initAlive() bool { return rec.Init > 0 && procAlive(rec.Init, rec.InitStart) }

func (rec slotRecord) claimerAlive() bool {
	return rec.Claimer > 0 && procAlive(rec.Claimer, rec.ClaimerStart)
}

// slot is a claimed uid range.
type slot struct {
	n int
	f *os.File // the locked registry file until the init holds the lock
}

func (s slot) hostUID() int      { return uidBase + s.n*uidCount }
func (s slot) projectID() uint32 { return uint32(s.n + 1) }

func slotPath(n int) string { return filepath.Join(slotsDir, strconv.Itoa(n)) }

// held is the set of slots this process claimed and has not released, so a
// claim skips them without a syscall.
var held = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

var (
	self      = sync.OnceValue(func() slotRecord { return slotRecord{Claimer: os.Getpid(), ClaimerStart: procStart(os.Getpid())} })
	mkSlotDir = sync.OnceValue(func() error { return os.MkdirAll(slotsDir, 0o700) })
)

// claimSlot claims a free uid range for the sandbox in dir, first fit.
func claimSlot(dir string) (slot, error) {
	if err := mkSlotDir(); err != nil {
		return slot{}, fmt.Errorf("uid range registry: %w", err)
	}
	rec := self()
	rec.Dir = dir
	for n := range maxSlots {
		held.Lock()
		mine := held.m[n]
		held.Unlock()
		if mine {
			continue
		}
		f, ok, err := lockSlot(n, true)
		if err != nil {
			return slot{}, err
		}
		if !ok {
			continue
		}
		if old, _ := readRecord(f); old.initAlive() {
			f.Close()
			continue
		}
		if err := writeRecord(f, rec); err != nil {
			f.Close()
			return slot{}, fmt.Errorf("claim uid range: %w", err)
		}
		held.Lock()
		held.m[n] = true
		held.Unlock()
		return slot{n: n, f: f}, nil
	}
	return slot{}, errors.New("no free uid range: too many sandboxes on this host")
}

// lockSlot opens slot n's file (creating it if create) and takes its lock
// without waiting; ok is false when someone holds it.
func lockSlot(n int, create bool) (_ *os.File, ok bool, _ error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(slotPath(n), flags|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("uid range registry: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("uid range registry: lock slot %d: %w", n, err)
	}
	return f, true, nil
}

func readRecord(f *os.File) (slotRecord, error) {
	var rec slotRecord
	b := make([]byte, 4096)
	n, err := f.ReadAt(b, 0)
	if n == 0 {
		return rec, err
	}
	return rec, json.Unmarshal(b[:n], &rec)
}

func writeRecord(f *os.File, rec slotRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(b)))
}

// recordInit notes the init that now holds the range with this process
// (it inherited the lock).
func (s *slot) recordInit(dir string, pid int, start uint64) error {
	if s.f == nil {
		return nil
	}
	rec := self()
	rec.Dir, rec.Init, rec.InitStart = dir, pid, start
	if err := writeRecord(s.f, rec); err != nil {
		return fmt.Errorf("record uid range holder: %w", err)
	}
	return nil
}

// takeBack gets this process a copy of the lock the init of the sandbox in
// dir holds, for a sandbox a daemon before this one created: from its
// pidfd (pid and start pin the process) the file at sbinit.FDSlot, if that is
// slot n's. Without it (the init is gone, or the kernel refuses), the range
// is free from the init's death on, as it was before.
func (s *slot) takeBack(pid int, start uint64) {
	if s.f != nil || s.n < 0 || pid <= 0 {
		return
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(pidfd)
	if procStart(pid) != start {
		return
	}
	fd, err := unix.PidfdGetfd(pidfd, sbinit.FDSlot, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), slotPath(s.n))
	var got, want unix.Stat_t
	if unix.Fstat(fd, &got) != nil || unix.Stat(slotPath(s.n), &want) != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		f.Close()
		return
	}
	s.f = f
}

// release gives the range back after the sandbox in dir is gone: it
// clears the record if it still names dir. The registry itself frees the
// range only once no process holds its lock and the recorded init is dead,
// so a release can never hand out a range a process still runs as.
func (s *slot) release(dir string) {
	if s.n < 0 {
		if s.f != nil {
			s.f.Close()
			s.f = nil
		}
		return
	}
	held.Lock()
	delete(held.m, s.n)
	held.Unlock()
	f := s.f
	s.f = nil
	if f == nil {
		var ok bool
		var err error
		if f, ok, err = lockSlot(s.n, false); err != nil || !ok {
			return
		}
	}
	defer f.Close()
	if rec, _ := readRecord(f); rec.Dir == dir && !rec.initAlive() {
		f.Truncate(0)
	}
}

// slotEntry is one slot as a reclaimer sees it.
type slotEntry struct {
	n      int
	rec    slotRecord
	locked bool // someone holds the lock: a claimer mid-create, or an init
}

// scanSlots reads every slot file, keyed by the sandbox directory it
// names. Only reclaimers call it (a directory left without state), never
// the create path.
func scanSlots() map[string]slotEntry {
	entries, _ := os.ReadDir(slotsDir)
	out := make(map[string]slotEntry, len(entries))
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || n >= maxSlots {
			continue
		}
		ent, err := inspectSlot(n)
		if err != nil || ent.rec.Dir == "" {
			continue
		}
		out[ent.rec.Dir] = ent
	}
	return out
}

// inspectSlot reads slot n's record and whether its lock is held.
func inspectSlot(n int) (slotEntry, error) {
	ent := slotEntry{n: n}
	f, err := os.OpenFile(slotPath(n), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ent, err
	}
	defer f.Close()
	ent.rec, _ = readRecord(f)
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	ent.locked = errors.Is(err, unix.EWOULDBLOCK)
	return ent, nil
}

// adoptSlot registers a sandbox made before the registry was host-wide
// (its range was claimed in the data dir): its init does not hold the lock,
// so the record naming its live init is what keeps the range taken.
func adoptSlot(n int, dir string, pid int, start uint64) error {
	if err := mkSlotDir(); err != nil {
		return fmt.Errorf("uid range registry: %w", err)
	}
	f, ok, err := lockSlot(n, true)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("uid range %d of %s is held by another process", n, dir)
	}
	defer f.Close()
	old, _ := readRecord(f)
	if old.Dir == dir && old.Init == pid {
		return nil
	}
	if old.initAlive() {
		return fmt.Errorf("uid range %d of %s is also held by %s", n, dir, old.Dir)
	}
	rec := self()
	rec.Dir, rec.Init, rec.InitStart = dir, pid, start
	return writeRecord(f, rec)
}

// slotProcesses lists the host processes running as a uid of slot n's
// range: the last way to find a sandbox's init when its creator died after
// cloning it and before recording or placing it.
func slotProcesses(n int) []int {
	lo := uidBase + n*uidCount
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		// /proc/PID is owned by the process's effective uid, except for a
		// process that is not dumpable (the init), which shows root: read
		// its real uid from status then.
		if syscall.Stat("/proc/"+name, &st) != nil {
			continue
		}
		uid := int(st.Uid)
		if uid == 0 {
			uid = statusUID(pid)
		}
		if uid >= lo && uid < lo+uidCount {
			pids = append(pids, pid)
		}
	}
	return pids
}

func statusUID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		var uid int
		if _, err := fmt.Sscanf(line, "Uid:\t%d", &uid); err == nil {
			return uid
		}
	}
	return -1
}
