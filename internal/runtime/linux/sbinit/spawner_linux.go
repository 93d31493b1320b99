package sbinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// SpawnerArg follows Arg to make the binary run as the spawner.
const SpawnerArg = "__spawner"

// FDSpawner is the spawner's end of its socket.
const FDSpawner = 3

// SpawnRequest is what the spawner needs to start one init; the files
// travel beside it: stderr first, then ExtraFiles in order.
type SpawnRequest struct {
	Path       string                 `json:"path"`
	Args       []string               `json:"args"`
	Env        []string               `json:"env"`
	Cloneflags uintptr                `json:"cloneflags"`
	UIDMaps    []syscall.SysProcIDMap `json:"uid_maps"`
	GIDMaps    []syscall.SysProcIDMap `json:"gid_maps"`
	Setgroups  bool                   `json:"setgroups"`
	Credential *syscall.Credential    `json:"credential"`
	Owner      int                    `json:"owner,omitempty"` // the user namespace's owner (see AsOwner)
	// Idle starts the init at the lowest priority (nice 19): a warm-pool
	// boot, which must not take CPU from live work; the runtime lifts it
	// when it hands the sandbox out.
	Idle bool `json:"idle,omitempty"`
}

type SpawnReply struct {
	Pid int    `json:"pid"`
	Err string `json:"err,omitempty"`
}

// serveSpawner serves spawn requests on FDSpawner until the daemon closes
// its end (or dies), then exits.
func serveSpawner() {
	// Inherited without close-on-exec; the inits must not inherit it: it
	// would let a sandbox ask a root process for any program.
	unix.CloseOnExec(FDSpawner)
	sock := os.NewFile(FDSpawner, "spawner")
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(16*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || n == 0 {
			os.Exit(0)
		}
		pid, err := spawnOne(buf[:n], oob[:oobn])
		rep := SpawnReply{Pid: pid}
		if err != nil {
			rep.Err = err.Error()
		}
		b, _ := json.Marshal(rep)
		if err := unix.Sendmsg(int(sock.Fd()), b, nil, nil, 0); err != nil {
			os.Exit(0)
		}
	}
}

func spawnOne(msg, oob []byte) (int, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, fmt.Errorf("control message: %w", err)
	}
	for _, c := range cmsgs {
		fds, err := unix.ParseUnixRights(&c)
		if err != nil {
			return 0, fmt.Errorf("control message: %w", err)
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "spawned"))
		}
	}
	var req SpawnRequest
	if err := json.Unmarshal(msg, &req); err != nil {
		return 0, fmt.Errorf("request: %w", err)
	}
	if len(files) == 0 || len(req.Args) == 0 {
		return 0, errors.New("request without stderr or arguments")
	}
	cmd := &exec.Cmd{Path: req.Path, Args: req.Args, Env: req.Env, Stderr: files[0], ExtraFiles: files[1:]}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// CLONE_PARENT: the init is the daemon's child, as if it had
		// forked it, so the daemon waits on it and it outlives us.
		Cloneflags:                 req.Cloneflags | syscall.CLONE_PARENT,
		UidMappings:                req.UIDMaps,
		GidMappings:                req.GIDMaps,
		GidMappingsEnableSetgroups: req.Setgroups,
		Credential:                 req.Credential,
	}
	start := cmd.Start
	if req.Idle {
		start = func() error { return AtIdle(cmd.Start) }
	}
	if err := AsOwner(req.Owner, start); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// AtIdle calls start, which forks, from a thread set to nice 19 for the
// call: the child, and every thread and process it makes, inherits it. A
// nice-19 thread gets ~1.5% of a CPU against one at nice 0, and all of an
// idle one; SCHED_IDLE, which gets nothing while anything else runs,
// starved pool refills for as long as a test suite kept the CPUs busy.
// The thread's own policy is restored after.
func AtIdle(start func() error) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return fmt.Errorf("scheduling policy: %w", err)
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: IdleNice}, 0); err != nil {
		return fmt.Errorf("scheduling policy: %w", err)
	}
	defer unix.SchedSetAttr(0, old, 0)
	return start()
}

// IdleNice is the nice value of a warm-pool boot (AtIdle).
const IdleNice = 19

// Unidle sets every thread of process pid back to the default scheduling
// policy (SCHED_OTHER, nice 0): a warm-pool sandbox handed out. Its
// threads all started idle from its init; it has no other process yet.
func Unidle(pid int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("scheduling policy of %d: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		err = unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("scheduling policy of %d: %w", tid, err)
		}
	}
	return nil
}
