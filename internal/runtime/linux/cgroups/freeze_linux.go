package cgroups

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrNoFreezer: the group has neither cgroup.freeze nor a v1 freezer.
var ErrNoFreezer = errors.New("no cgroup freezer")

// freezer is where the group's freezer is and how it speaks.
type freezer struct {
	dir, file, on, off, state, frozen string
}

func (c *Cgroup) freezer() (freezer, bool) {
	switch fz, ok := c.ctl["freezer"]; {
	case c.freeze:
		return freezer{c.unified, "cgroup.freeze", "1", "0", "cgroup.events", "frozen 1"}, true
	case ok:
		return freezer{fz, "freezer.state", "FROZEN", "THAWED", "freezer.state", "FROZEN"}, true
	}
	return freezer{}, false
}

// Freeze stops every task of the group until Thaw, and waits (up to
// timeout) until the kernel says they all are: a task in uninterruptible
// sleep holds the freeze off until it wakes.
func (c *Cgroup) Freeze(timeout time.Duration) error {
	f, ok := c.freezer()
	if !ok {
		return ErrNoFreezer
	}
	if err := write(f.dir, f.file, f.on); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", c.name, err)
	}
	deadline := time.Now().Add(timeout)
	for i := 0; ; i++ {
		b, err := os.ReadFile(f.dir + "/" + f.state)
		if err != nil {
			return fmt.Errorf("freeze cgroup %s: %w", c.name, err)
		}
		if strings.Contains(string(b), f.frozen) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze cgroup %s: not frozen after %v", c.name, timeout)
		}
		time.Sleep(time.Duration(min(i+1, 10)) * 100 * time.Microsecond)
	}
}

// Thaw lets the group's tasks run again.
func (c *Cgroup) Thaw() error {
	f, ok := c.freezer()
	if !ok {
		return ErrNoFreezer
	}
	if err := write(f.dir, f.file, f.off); err != nil {
		return fmt.Errorf("thaw cgroup %s: %w", c.name, err)
	}
	return nil
}

// Frozen says whether the group is frozen (or being frozen).
func (c *Cgroup) Frozen() bool {
	f, ok := c.freezer()
	if !ok {
		return false
	}
	b, err := os.ReadFile(f.dir + "/" + f.file)
	return err == nil && strings.TrimSpace(string(b)) != f.off
}
