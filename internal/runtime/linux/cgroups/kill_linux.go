package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killAttempts bounds Kill; with the growing sleeps below it waits about
// five seconds for the last process before giving up.
const killAttempts = 300

// Kill sends SIGKILL to every process in the group and returns once the group
// is empty. A sandbox that forks as fast as it can must not outrun it: with
// cgroup.kill the kernel blocks forks into the group while it kills; without
// it the group is frozen while its pids are listed and signalled, so no
// process can fork a child that the list misses.
func (c *Cgroup) Kill() error {
	if c.kill {
		// ENODEV: the group's directory was removed after the open (a
		// sweep took it as an empty group): nothing is left to kill.
		if err := write(c.unified, "cgroup.kill", "1"); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("kill cgroup %s: %w", c.name, err)
		}
	}
	// Also after cgroup.kill: it only reaches processes in the unified
	// group, and a process half-added by a failed Add may sit elsewhere.
	signalled := map[int]bool{}
	for i := range killAttempts {
		pids, err := c.Procs()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", c.name, err)
		}
		if len(pids) == 0 {
			return nil
		}
		fresh := false
		for _, p := range pids {
			fresh = fresh || !signalled[p]
		}
		if fresh {
			// Killed processes that have not finished exiting stay listed;
			// only new pids need another frozen round.
			if err := c.freezeKill(signalled); err != nil {
				return fmt.Errorf("kill cgroup %s: %w", c.name, err)
			}
			continue
		}
		time.Sleep(time.Duration(min(i+1, 20)) * time.Millisecond)
	}
	pids, _ := c.Procs()
	return fmt.Errorf("kill cgroup %s: %d processes left: %w", c.name, len(pids), unix.EBUSY)
}

// freezeKill freezes the group, signals every listed pid, and thaws it. A
// frozen task does not die until thawed (v1), but it cannot fork either.
func (c *Cgroup) freezeKill(signalled map[int]bool) error {
	thaw, err := c.freezeGroup()
	if err != nil {
		return err
	}
	pids, err := c.Procs()
	if err == nil {
		for _, p := range pids {
			// ESRCH: it exited between the listing and the signal.
			if kerr := unix.Kill(p, unix.SIGKILL); kerr != nil && !errors.Is(kerr, unix.ESRCH) {
				err = fmt.Errorf("signal pid %d: %w", p, kerr)
				break
			}
			signalled[p] = true
		}
	}
	return errors.Join(err, thaw())
}

// freezeGroup freezes the group with the best freezer it has and returns the
// function that thaws it. Without a freezer it returns a no-op: Kill then
// relies on repeating until no new pid appears.
func (c *Cgroup) freezeGroup() (thaw func() error, err error) {
	f, ok := c.freezer()
	if !ok {
		return func() error { return nil }, nil
	}
	if err := write(f.dir, f.file, f.on); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return func() error { return nil }, nil
		}
		return nil, err
	}
	thaw = func() error {
		if err := write(f.dir, f.file, f.off); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	// Freezing is asynchronous. A task stuck in uninterruptible sleep can
	// hold it off indefinitely, so the wait is bounded and Kill goes on
	// regardless: signals still land, only the fork race reopens.
	for i := 0; i < 100; i++ {
		b, err := os.ReadFile(f.dir + "/" + f.state)
		if err != nil || strings.Contains(string(b), f.frozen) {
			break
		}
		time.Sleep(time.Duration(min(i+1, 5)) * 100 * time.Microsecond)
	}
	return thaw, nil
}
