package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// The daemon does not fork sandbox inits itself. A clone with
// CLONE_NEWUSER cannot be a vfork (the parent writes the child's id maps
// while the child waits), so Go copies the caller's whole page tables and
// write-protects every page of its heap; each page the daemon writes
// afterwards (its requests, the database, the GC) takes a fault. The
// spawner is a small helper process, the same binary started once with a
// cheap vfork, that forks the inits instead: its copy is small, and the
// daemon's memory is never shared. It clones with CLONE_PARENT, so each
// init is still the daemon's child, waited on by pidfd as before.

// spawnTimeout bounds one request; a fork takes well under a millisecond.
const spawnTimeout = 10 * time.Second

// A spawner answers one request at a time, and a request lasts until the
// init has executed its program (os/exec reports a failed exec): ~5 ms
// here, tens of milliseconds when the CPUs are busy. One spawner would cap
// a host's creates at a few hundred a second however many cores it has.
// Creates therefore take the first free spawner of a set, each started
// when concurrency first asks for it (a sequence of creates uses only the
// first), and the warm pool's refills, whose spawns run at nice 19, have
// one of their own, so none holds a spawner a create waits for. On a
// 2-core host a burst is CPU-bound either way (bench burst -v: "create:
// wait for a spawner").
type spawners struct {
	slots chan struct{} // one per spawner in all: at most that many requests at once
	all   []*spawner    // for creates, taken first free
	idle  *spawner      // for the warm pool's refills
	phase func(name string) (end func())
}

// maxSpawners bounds the set; an idle spawner holds ~0.8 MiB of its own
// (the program's pages are the inits').
const maxSpawners = 8

func newSpawners(binary string, phase func(string) func()) *spawners {
	n := min(max(2, goruntime.GOMAXPROCS(0)), maxSpawners)
	ss := &spawners{slots: make(chan struct{}, n), idle: &spawner{binary: binary}, phase: phase}
	for range n {
		ss.all = append(ss.all, &spawner{binary: binary})
	}
	return ss
}

// spawn starts cmd through a spawner (see spawnRequest, spawnLocked).
func (ss *spawners) spawn(cmd *exec.Cmd, owner int, idle bool) (*os.Process, error) {
	b, fds, err := spawnRequest(cmd, owner, idle)
	if err != nil {
		return nil, err
	}
	end := ss.phase("create: wait for a spawner")
	if idle {
		ss.idle.mu.Lock()
		end()
		defer ss.idle.mu.Unlock()
		return ss.idle.spawnLocked(b, fds)
	}
	ss.slots <- struct{}{}
	defer func() { <-ss.slots }()
	s := ss.take()
	end()
	defer s.mu.Unlock()
	return s.spawnLocked(b, fds)
}

// take returns the first free spawner, locked. With a slot held one is
// free, but for a moment while close holds each in turn.
func (ss *spawners) take() *spawner {
	for _, s := range ss.all {
		if s.mu.TryLock() {
			return s
		}
	}
	s := ss.all[0]
	s.mu.Lock()
	return s
}

func (ss *spawners) close() {
	for _, s := range ss.all {
		s.close()
	}
	ss.idle.close()
}

// spawner is the daemon's handle of one helper, started on first use.
type spawner struct {
	binary string
	mu     sync.Mutex
	cmd    *exec.Cmd
	conn   *net.UnixConn
	closed bool
}

// start runs a fresh spawner; called with mu held.
func (s *spawner) start() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("spawner socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return fmt.Errorf("spawner socket: %w", err)
	}
	cmd := exec.Command(s.binary, sbinit.Arg, sbinit.SpawnerArg)
	// It only forks: one P and a small heap keep the copy it makes small.
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		fc.Close()
		return fmt.Errorf("start spawner: %w", err)
	}
	s.cmd, s.conn = cmd, fc.(*net.UnixConn)
	return nil
}

// stop closes the socket, on which the spawner exits, and reaps it;
// called with mu held.
func (s *spawner) stop() {
	if s.cmd == nil {
		return
	}
	s.conn.Close()
	done := make(chan struct{})
	go func() {
		s.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(spawnTimeout):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd, s.conn = nil, nil
}

func (s *spawner) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop()
	s.closed = true
}

// spawnRequest is the request for cmd (not yet started; Stdin and Stdout
// unset, Stderr a file) and the files it passes.
func spawnRequest(cmd *exec.Cmd, owner int, idle bool) ([]byte, []int, error) {
	stderr, ok := cmd.Stderr.(*os.File)
	if !ok || cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, nil, errors.New("spawn: stderr must be a file, stdin and stdout unset")
	}
	attr := cmd.SysProcAttr
	req := sbinit.SpawnRequest{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Cloneflags: attr.Cloneflags,
		UIDMaps: attr.UidMappings, GIDMaps: attr.GidMappings, Setgroups: attr.GidMappingsEnableSetgroups,
		Credential: attr.Credential, Owner: owner, Idle: idle}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	fds := []int{int(stderr.Fd())}
	for _, f := range cmd.ExtraFiles {
		fds = append(fds, int(f.Fd()))
	}
	return b, fds, nil
}

// spawnLocked sends request b with fds to this spawner and returns the
// process it started as a child of this process; the caller holds mu and
// waits on the process. A spawner that died since the last call is
// replaced first. A request whose answer is lost is not retried: the init
// might be running.
func (s *spawner) spawnLocked(b []byte, fds []int) (*os.Process, error) {
	if s.closed {
		return nil, errors.New("spawn: runtime closed")
	}
	if s.cmd != nil && s.cmd.ProcessState == nil && !alive(s.cmd.Process) {
		s.stop()
	}
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return nil, err
		}
	}
	rep, err := s.roundTrip(b, fds)
	if errors.Is(err, errNotTaken) {
		// The spawner died (unseen) with the request unread: a new one
		// can take it.
		s.stop()
		if err := s.start(); err != nil {
			return nil, err
		}
		rep, err = s.roundTrip(b, fds)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	if rep.Err != "" {
		return nil, fmt.Errorf("spawn: %s", rep.Err)
	}
	// Our child (CLONE_PARENT) and not yet waited on, so the pid cannot
	// have been reused; from here on it is held by pidfd.
	return os.FindProcess(rep.Pid)
}

// errNotTaken: the spawner is gone and never read the request, so
// nothing was spawned. A send to a dead peer fails; a request left unread
// in the queue of a peer that then closed makes the read fail with
// ECONNRESET (a peer that read it and died gives end of file instead).
var errNotTaken = errors.New("spawn: the spawner did not take the request")

// roundTrip sends one request and reads its answer.
func (s *spawner) roundTrip(b []byte, fds []int) (sbinit.SpawnReply, error) {
	var rep sbinit.SpawnReply
	s.conn.SetDeadline(time.Now().Add(spawnTimeout))
	if _, _, err := s.conn.WriteMsgUnix(b, unix.UnixRights(fds...), nil); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
			return rep, errNotTaken
		}
		return rep, fmt.Errorf("spawn: send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, _, _, err := s.conn.ReadMsgUnix(buf, nil)
	if errors.Is(err, syscall.ECONNRESET) {
		return rep, errNotTaken
	}
	if (err == nil && n == 0) || errors.Is(err, io.EOF) {
		// It read the request and died (killed, say) before it answered:
		// whether it forked first is unknown, so this is not retried.
		err = errors.New("the spawner exited before it answered; create the sandbox again")
	}
	if err != nil {
		return rep, fmt.Errorf("spawn: %w", err)
	}
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		return rep, fmt.Errorf("spawn: answer: %w", err)
	}
	return rep, nil
}

// alive reports whether p has not exited, without reaping it.
func alive(p *os.Process) bool {
	var si unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.Pid, &si, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && si.Signo == 0
}
