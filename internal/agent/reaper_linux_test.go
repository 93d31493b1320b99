package agent

import (
	"syscall"
	"testing"
	"time"
)

// startChild starts argv through r as the agent does, with a pidfd.
func startChild(t *testing.T, r *reaper, argv ...string) *child {
	t.Helper()
	pidfd := -1
	c, err := r.start(func() (int, int, error) {
		pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{PidFD: &pidfd}})
		return pid, pidfd, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.pidfd == nil {
		t.Fatalf("no pidfd for %d: the kernel gives one since 5.3", c.pid)
	}
	return c
}

// waitWithin is r.wait(c), failed after a bound instead of hanging.
func waitWithin(t *testing.T, r *reaper, c *child) waitResult {
	t.Helper()
	got := make(chan waitResult, 1)
	go func() { got <- r.wait(c) }()
	select {
	case res := <-got:
		return res
	case <-time.After(10 * time.Second):
		t.Fatalf("no status for %d within 10s", c.pid)
		return waitResult{}
	}
}

// TestReaperWaitsOnThePidfd: with no reaper loop running (no SIGCHLD
// handled), the exit still wakes the waiter, through its pidfd.
func TestReaperWaitsOnThePidfd(t *testing.T) {
	for _, all := range []bool{false, true} {
		r := newReaper(all)
		c := startChild(t, r, "/bin/sh", "-c", "sleep 0.1; exit 7")
		res := waitWithin(t, r, c)
		if res.err != nil || !res.status.Exited() || res.status.ExitStatus() != 7 {
			t.Fatalf("all=%v: status %+v, want exit 7", all, res)
		}
		if len(r.waiting) != 0 {
			t.Fatalf("all=%v: %d pids still registered", all, len(r.waiting))
		}
	}
}

// TestReaperWaitAfterTheLoopReaped: the SIGCHLD loop may reap first; the
// status it delivered is the one wait returns.
func TestReaperWaitAfterTheLoopReaped(t *testing.T) {
	r := newReaper(true)
	c := startChild(t, r, "/bin/sh", "-c", "exit 3")
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.reap()
		r.mu.Lock()
		_, pending := r.waiting[c.pid]
		r.mu.Unlock()
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d not reaped within 10s", c.pid)
		}
		time.Sleep(time.Millisecond)
	}
	res := waitWithin(t, r, c)
	if res.err != nil || res.status.ExitStatus() != 3 {
		t.Fatalf("status %+v, want exit 3", res)
	}
}

// TestReaperLoopWakesOnStart: the loop stops looking while it has nothing
// to wait for, and a start brings it back: a child no exec waits for (no
// pidfd waiter) still gets its status, from the loop alone.
func TestReaperLoopWakesOnStart(t *testing.T) {
	r := newReaper(false)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); r.run(stop) }()
	defer func() { close(stop); <-done }()
	time.Sleep(3 * reapMin) // its first look found nothing: idle since
	c := startChild(t, r, "/bin/sh", "-c", "exit 5")
	c.pidfd.Close()
	select {
	case res := <-c.status:
		if res.err != nil || res.status.ExitStatus() != 5 {
			t.Fatalf("status %+v, want exit 5", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the loop did not reap %d within 10s of its start", c.pid)
	}
}
