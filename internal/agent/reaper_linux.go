package agent

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The bounds of the reaper loop's interval (see run). The agent's own
// commands do not wait for the loop (their pidfds wake their execs, which
// reap); it is there for orphans, which no one else waits for.
const (
	reapMin = 10 * time.Millisecond
	reapMax = time.Second
)

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

	// started has a value after each start: the loop, idle while there
	// was nothing to wait for, looks again.
	started chan struct{}
}

func newReaper(all bool) *reaper {
	return &reaper{all: all, waiting: map[int]chan waitResult{}, started: make(chan struct{}, 1)}
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
	select {
	case r.started <- struct{}{}:
	default:
	}
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
// goroutine from the runtime's poller and it reaps at once (every exited
// child, orphans too). The reaper's loop may reap first: either way the
// status comes through status, once.
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

// run reaps until stop is closed, on a timer: reapMin after a start or
// after it reaped something, doubled each time it found nothing, up to
// reapMax; and not at all while there is nothing it could reap (as PID 1:
// no child at all, so no descendant that could become an orphan; else no
// pid of its own), until the next start.
//
// No SIGCHLD: os/signal's Notify starts two threads that stay for the
// sandbox's life (one to receive signals, one locked to keep a signal
// mask), ~0.1 MiB of each idle sandbox and part of every start, and an
// idle sandbox woke every second. An orphan that exits after a quiet spell
// stays a zombie for up to reapMax (or until a command of the agent ends,
// whose exec reaps every exited child); one exit brings the loop back to
// reapMin, so a stream of orphans is reaped as it comes.
func (r *reaper) run(stop <-chan struct{}) {
	interval := reapMin
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.started:
			interval = reapMin
			t.Reset(interval)
			continue
		case <-t.C:
		}
		if r.reap() {
			interval = reapMin
		} else {
			interval = min(2*interval, reapMax)
		}
		if !r.idle() {
			t.Reset(interval)
		} // else the timer has fired and stays so until the next start
	}
}

// idle says whether nothing could exit that the reaper would reap: as PID
// 1, no child at all (a descendant's parent is a child or, once orphaned,
// this process); else no pid of its own.
func (r *reaper) idle() bool {
	if r.all {
		return childless()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting) == 0
}

// reap collects every exited child it is to (as PID 1: all of them; else
// its own pids) and says whether there was one.
func (r *reaper) reap() (reaped bool) {
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
				return reaped
			}
			reaped = true
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
			reaped = true
		case got == pid:
			r.deliver(pid, waitResult{status: ws})
			reaped = true
		}
	}
	return reaped
}

// deliver hands a status to its exec; statuses of orphans are dropped.
func (r *reaper) deliver(pid int, res waitResult) {
	if ch, ok := r.waiting[pid]; ok {
		ch <- res
		delete(r.waiting, pid)
	}
}
