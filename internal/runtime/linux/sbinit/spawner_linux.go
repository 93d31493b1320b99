package sbinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	if err := AsOwner(req.Owner, cmd.Start); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}
