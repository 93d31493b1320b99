package sbinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/runtime/linux/landlock"
	"github.com/airlockhq/airlock/internal/runtime/linux/seccomp"
)

// Arg is the hidden first argument that makes the airlock binary run as
// a sandbox's init. cmd/airlock checks it before anything else.
const Arg = "__airlock_sandbox_init"

// File descriptors the host hands the init, in ExtraFiles order.
const (
	FDConfig   = 3 // read: the JSON Config, then EOF as the go signal
	FDStatus   = 4 // write: "ok" once the agent serves, or the error
	FDListener = 5 // the agent's listening unix socket
	FDBinary   = 6 // the binary the init was executed from (see initExec)
	// FDSlot is the locked uid range registry file, when the runtime claims
	// ranges; the init keeps it open for its life, and nothing else with it.
	FDSlot = 7
)

// Config is everything the init needs; it travels over a pipe rather
// than the environment, which sandboxed code could read back from /proc.
type Config struct {
	ID       string   `json:"id"`
	Hostname string   `json:"hostname"`
	Lower    string   `json:"lower"`
	Binds    []string `json:"binds"`
	// BindFrom is where Binds are found when not at their own path: the
	// host's root seen from a container ("" on a host).
	BindFrom string       `json:"bind_from,omitempty"`
	Upper    string       `json:"upper"`
	Work     string       `json:"work"`
	Rootfs   string       `json:"rootfs"`
	TmpMB    int64        `json:"tmp_mb"`
	Env      []string     `json:"env"`
	Workdir  string       `json:"workdir"`
	UID      int          `json:"uid"`
	GID      int          `json:"gid"`
	Rootless bool         `json:"rootless"`
	Layer    string       `json:"layer,omitempty"` // a built template's layer directory (host path)
	Build    bool         `json:"build,omitempty"` // a template build: /usr/local is writable
	Volumes  []VolumeBind `json:"volumes,omitempty"`
	// VolumeSock is the fd of the socket the host sends the volumes'
	// mounts on (volumes_linux.go).
	VolumeSock int `json:"volume_sock,omitempty"`
	// CommandTasks is the fd of the tasks file of the sandbox's commands
	// cgroup (cgroups.Commands), opened by the host; 0 when there is none.
	// The fork thread writes itself there, so every command it starts
	// counts against that group's pids limit, and the init's other
	// threads do not.
	CommandTasks int `json:"command_tasks,omitempty"`
	// ReserveThreads, without CommandTasks, is how many threads the init
	// starts and keeps idle before any command runs: its commands share
	// its pids limit, and the Go runtime ends a program that cannot start
	// a thread, so the init takes the threads its group's limit holds for
	// it (cgroups.InitPids) while it still can.
	ReserveThreads int   `json:"reserve_threads,omitempty"`
	Trace          bool  `json:"trace"`   // report phase times on the status pipe
	SentAt         int64 `json:"sent_at"` // host clock (ns) just before the clone, when tracing

	status *os.File
	placed func() error // blocks until the host has placed the init in its cgroups
	forker *forkThread  // the thread every sandboxed process is forked from
}

func (c *Config) warn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "airlock init %s: "+format+"\n", append([]any{c.ID}, args...)...)
}

// writableDirs are the only places sandboxed code (and the file API acting
// for it) may write; everything else is read-only under landlock.
var writableDirs = []string{"/home/user", "/tmp", "/var/tmp", "/dev"}

// Main runs the sandbox init (or the spawner that forks the inits) and
// never returns.
func Main() {
	if len(os.Args) > 2 && os.Args[2] == SpawnerArg {
		serveSpawner()
		return
	}
	// Only execve needed it, through /proc/self/fd.
	unix.Close(FDBinary)
	status := os.NewFile(FDStatus, "status")
	if err := runInit(status); err != nil {
		// Before "ok" the host reads the status pipe; after it, only the
		// sandbox's init.log (this process's stderr) can tell.
		fmt.Fprintf(status, "error: %v\n", err)
		fmt.Fprintf(os.Stderr, "airlock init: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runInit(status *os.File) error {
	if err := dropStraySignals(); err != nil {
		return err
	}
	c := &Config{status: status}
	cfgFile := os.NewFile(FDConfig, "config")
	dec := json.NewDecoder(cfgFile)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("read init config: %w", err)
	}
	c.placed = func() error {
		// The host closes its end of the pipe once this process is in its
		// cgroups; only then may the cgroup namespace be created, rooted at
		// the sandbox's own group.
		_, err := io.Copy(io.Discard, dec.Buffered())
		if err == nil {
			_, err = io.Copy(io.Discard, cfgFile)
		}
		cfgFile.Close()
		return err
	}
	ln, err := net.FileListener(os.NewFile(FDListener, "agent.sock"))
	if err != nil {
		return fmt.Errorf("agent listener: %w", err)
	}
	if err := prepare(c); err != nil {
		return err
	}
	fmt.Fprintln(status, "ok")
	status.Close()
	// No sandboxed process starts before the agent has its threads: a
	// command started at once (a fork bomb) would otherwise take pids the
	// agent counts on. With its commands in a group of their own
	// (CommandTasks) there is nothing to take.
	reserved := make(chan struct{})
	go func() {
		reserveThreads(c.ReserveThreads)
		close(reserved)
	}()
	return agent.Serve(context.Background(), ln, agent.Config{
		Thread: func(fn func()) {
			<-reserved
			c.forker.run(fn)
		},
		UID: c.UID, GID: c.GID, Root: "/", Env: c.Env, Workdir: c.Workdir, Reap: true,
	})
}

// straySignals are those whose Go handler would end the init: sandboxed
// code must not be able to stop the agent with a stray kill.
var straySignals = []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGABRT, unix.SIGSYS}

// dropStraySignals gives straySignals the default action. The kernel
// drops a signal whose action is the default for PID 1 of a pid
// namespace (SIGNAL_UNKILLABLE), from inside it or from the host; only
// SIGKILL and SIGSTOP from the host reach it. The default, not ignored:
// an ignored signal stays ignored across fork and exec, and every command
// would inherit that. Set behind the Go runtime's back, which keeps
// thinking it handles them (a forked child resets them to the default
// anyway): os/signal's Notify would start a locked thread of its own and
// hand it each signal in turn, ~0.8 ms of every start on this VM, and
// that thread would stay for the sandbox's life.
func dropStraySignals() error {
	var dfl [4]uint64 // struct sigaction: SIG_DFL (0), no flags, no restorer, empty mask
	for _, sig := range straySignals {
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("default action for %v: %w", sig, e)
		}
	}
	return nil
}

// prepare turns this process into a locked-down sandbox init: namespaces
// finished, root filesystem built, network loopback up, then every layer
// that cannot be undone.
func prepare(c *Config) error {
	t0 := time.Unix(0, c.SentAt)
	step := func(name string) {
		if c.Trace {
			fmt.Fprintf(c.status, "trace init: %s %d\n", name, time.Since(t0).Microseconds())
			t0 = time.Now()
		}
	}
	step("exec, Go start, config")
	// The root filesystem is built while the host moves this process into
	// its cgroups (a migration waits for an RCU grace period): no sandboxed
	// code runs until both are done.
	if err := unix.Sethostname([]byte(c.Hostname)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	if err := setupRootfs(c); err != nil {
		return err
	}
	step("root filesystem")
	if err := loopbackUp(); err != nil {
		return err
	}
	// Not dumpable: sandboxed processes (even the same uid) cannot ptrace
	// the init or open its /proc/1/exe, mem or fds (CVE-2019-5736 class).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("set not dumpable: %w", err)
	}
	step("loopback, not dumpable")
	if err := c.placed(); err != nil {
		return fmt.Errorf("wait for cgroup placement: %w", err)
	}
	step("wait for cgroup placement")
	f, err := newForkThread(c.CommandTasks)
	if err != nil {
		return err
	}
	c.forker = f
	step("fork thread")
	// Each thread's namespace is rooted at its own groups: the fork
	// thread's, and so its commands', at the commands subgroup, where they
	// see their groups as "/" like the init's other threads see theirs.
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, 0, 0); e != 0 {
		return fmt.Errorf("unshare cgroup namespace: %w", e)
	}
	step("cgroup namespace")
	writable := writableDirs
	if c.Build {
		writable = append(slices.Clone(writableDirs), UsrLocal)
	}
	for _, v := range c.Volumes {
		if !v.ReadOnly {
			writable = append(slices.Clone(writable), v.Target)
		}
	}
	if _, err := landlock.Restrict([]string{"/"}, writable); err != nil && !errors.Is(err, landlock.ErrUnsupported) {
		return fmt.Errorf("landlock: %w", err)
	}
	step("landlock")
	if err := dropCapabilities(c.forker); err != nil {
		return err
	}
	step("drop capabilities")
	if err := seccomp.Install(); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	step("seccomp")
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	return nil
}

// agentCaps are all the agent keeps: switching to the sandbox user for
// processes and file operations, and signalling processes of that user.
var agentCaps = []uint{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL}

// dropCapabilities leaves the agent only agentCaps, on every thread
// (capabilities are per thread), and empties the bounding and ambient sets
// of the fork thread, the only one that ever forks. A command inherits those
// empty sets and loses the rest when it setuids to the sandbox user, so it
// ends with every set empty. (Dropping the bounding set on every thread
// would take one stop-the-world per capability: ~4 ms of each create.)
func dropCapabilities(f *forkThread) error {
	var err error
	last := lastCap()
	f.run(func() {
		for cp := uintptr(0); cp <= last; cp++ {
			if e := unix.Prctl(unix.PR_CAPBSET_DROP, cp, 0, 0, 0); e != nil && e != unix.EINVAL {
				err = fmt.Errorf("drop capability %d from bounding set: %w", cp, e)
				return
			}
		}
		if e := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); e != nil {
			err = fmt.Errorf("clear ambient capabilities: %w", e)
		}
	})
	if err != nil {
		return err
	}
	var mask [2]uint32
	for _, cp := range agentCaps {
		mask[cp/32] |= 1 << (cp % 32)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: mask[0], Permitted: mask[0]},
		{Effective: mask[1], Permitted: mask[1]},
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("set capabilities: %w", e)
	}
	return nil
}

// forkThread is one OS thread, locked for good, that runs what it is
// given. Per-thread kernel state set on it (bounding set, landlock domain)
// is what every sandboxed process inherits, and all of them share it: a
// process forked from another thread would sit in a sibling landlock domain
// and could not, say, read its neighbours' /proc entries.
type forkThread struct{ work chan func() }

func newForkThread(tasks int) (*forkThread, error) {
	f := &forkThread{work: make(chan func())}
	placed := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread dies with the agent
		placed <- enterCommands(tasks)
		for fn := range f.work {
			fn()
		}
	}()
	if err := <-placed; err != nil {
		return nil, err
	}
	return f, nil
}

// enterCommands moves the calling thread, alone, into the cgroup whose
// tasks file fd is open on (0: none), and closes it. The Go runtime starts
// new threads from other threads than a locked one, so only the fork
// thread and what it forks land there.
func enterCommands(fd int) error {
	if fd <= 0 {
		return nil
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("0")); err != nil {
		return fmt.Errorf("fork thread into the commands cgroup: %w", err)
	}
	return nil
}

// run calls fn on the fork thread and waits for it.
func (f *forkThread) run(fn func()) {
	done := make(chan struct{})
	f.work <- func() { defer close(done); fn() }
	<-done
}

func lastCap() uintptr {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		var n int
		if _, err := fmt.Sscanf(string(b), "%d", &n); err == nil && n > 0 && n < 64 {
			return uintptr(n)
		}
	}
	return unix.CAP_LAST_CAP
}

// reserveThreads has the Go runtime start threads until the process has n,
// and lets them idle: the runtime keeps idle threads and takes one before
// it starts another, so the agent has them when its commands hold every
// pid of the sandbox (see Config.ReserveThreads). Each is started by a
// goroutine that locks itself to its thread and parks: a locked thread
// runs nothing else, so the scheduler starts the next one at once (a
// goroutine blocked in a read instead waits for the runtime's monitor to
// notice, which backs off to 10 ms when idle: the first command of a new
// sandbox waited for that). Unlocked, the threads join the runtime's idle
// list and stay.
func reserveThreads(n int) {
	if n <= 0 {
		return
	}
	var release sync.WaitGroup
	release.Add(1)
	defer release.Done()
	// Idle threads are taken first, so the count may stay short of n after
	// a round: more goroutines lock until it is not (none is released
	// before, or it would free a thread for the next).
	for locked := 0; locked < 2*n; {
		have := threadCount()
		if have >= n || have == 0 {
			return
		}
		var started sync.WaitGroup
		for range n - have {
			started.Add(1)
			locked++
			go func() {
				goruntime.LockOSThread()
				started.Done()
				release.Wait()
				goruntime.UnlockOSThread()
			}()
		}
		started.Wait()
	}
}

// threadCount is the number of threads of this process.
func threadCount() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		var n int
		if _, err := fmt.Sscanf(line, "Threads:\t%d", &n); err == nil {
			return n
		}
	}
	return 0
}
