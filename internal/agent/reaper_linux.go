package agent

import (
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// reapPoll is a slow fallback to SIGCHLD: signals coalesce and another part
// of the process could reset the handler; a missed exit must not hang an exec.
const reapPoll = time.Second

// waitResult is how one started process ended.
type waitResult struct {
	status unix.WaitStatus
	err    error
}

// reaper collects exit statuses and hands them to the exec waiting for each
// pid. As PID 1 (all) it waits for any child, so orphans re-parented to the
// agent do not pile up as zombies; otherwise it waits only for its own pids
// and leaves the rest of the process's children alone.
type reaper struct {
	all bool

	// mu is held across fork+register and across every wait4, so a child
	// that exits at once cannot be reaped before its pid is registered.
	mu      sync.Mutex
	waiting map[int]chan waitResult
}

func newReaper(all bool) *reaper {
	return &reaper{all: all, waiting: map[int]chan waitResult{}}
}

// start runs fork (which returns a pid and, where the kernel gives one, a
// pidfd, else -1) and registers the pid for a status.
func (r *reaper) start(fork func() (int, int, error)) (*child, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, pidfd, err := fork()
	if err != nil {
		return nil, err
	}
	ch := make(chan waitResult, 1)
	r.waiting[pid] = ch
	c := &child{pid: pid, status: ch}
	if pidfd >= 0 {
		// Non-blocking, so the runtime's poller watches it for the exit.
		if unix.SetNonblock(pidfd, true) == nil {
			c.pidfd = os.NewFile(uintptr(pidfd), "pidfd")
		} else {
			unix.Close(pidfd)
		}
	}
	return c, nil
}

// child is a started process whose status the reaper collects.
type child struct {
	pid    int
	status <-chan waitResult
	pidfd  *os.File // readable once the process has exited; nil without one
}

// wait returns how the child ended. With a pidfd the exit wakes this
// goroutine from the runtime's poller and it reaps at once; SIGCHLD would
// take the long way (the signal's thread, os/signal's goroutine, the
// reaper's), a good part of a short command's time. The reaper still gets
// the signal and may reap first: either way the status comes through
// status, once.
func (r *reaper) wait(c *child) waitResult {
	if c.pidfd != nil {
		defer c.pidfd.Close()
		if rc, err := c.pidfd.SyscallConn(); err == nil {
			var res waitResult
			rerr := rc.Read(func(uintptr) bool {
				r.reap()
				select {
				case res = <-c.status:
					return true
				default:
					return false // not exited yet: wait for the pidfd
				}
			})
			if rerr == nil {
				return res
			}
		}
	}
	return <-c.status
}

// run reaps on every SIGCHLD until stop is closed.
func (r *reaper) run(stop <-chan struct{}) {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, unix.SIGCHLD)
	defer signal.Stop(sigc)
	tick := time.NewTicker(reapPoll)
	defer tick.Stop()
	for {
		r.reap()
		select {
		case <-stop:
			return
		case <-sigc:
		case <-tick.C:
		}
	}
}

func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.all {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				return
			}
			r.deliver(pid, waitResult{status: ws})
		}
	}
	for pid := range r.waiting {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		for err == unix.EINTR {
			got, err = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
		switch {
		case err != nil:
			// Someone else reaped it; the exec must still end.
			r.deliver(pid, waitResult{err: err})
		case got == pid:
			r.deliver(pid, waitResult{status: ws})
		}
	}
}

// deliver hands a status to its exec; statuses of orphans are dropped.
func (r *reaper) deliver(pid int, res waitResult) {
	if ch, ok := r.waiting[pid]; ok {
		ch <- res
		delete(r.waiting, pid)
	}
}
