package cgroups

import (
	"fmt"
	"math"
	"strconv"

	"github.com/airlockhq/airlock/internal/runtime"
)

// cpuPeriod is the CFS period in microseconds; 100 ms is the kernel default
// and keeps throttling coarse enough to be cheap.
const cpuPeriod = 100_000

// SetLimits writes the memory, CPU and pids limits of lim (zero fields take
// the defaults). lim.Pids bounds the sandbox's commands: the group holds
// InitPids more for its init, and its Commands subgroup, where there is
// one, lim.Pids and the one init thread that forks them. New calls it; a
// warm pool may call it again once the sandbox's real limits are known.
func (c *Cgroup) SetLimits(lim runtime.Limits) error {
	lim = lim.WithDefaults()
	if lim.CPUs < 0 || lim.MemoryMB < 0 || lim.Pids < 0 {
		return fmt.Errorf("set limits of cgroup %s: negative limit: %w", c.name, runtime.ErrInvalid)
	}
	if err := c.setMemory(lim.MemoryMB << 20); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", c.name, err)
	}
	quota := max(int64(math.Round(lim.CPUs*cpuPeriod)), 1000)
	if err := c.setCPU(quota); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", c.name, err)
	}
	if err := write(c.ctl["pids"], "pids.max", strconv.FormatInt(lim.Pids+InitPids, 10)); err != nil {
		return fmt.Errorf("set limits of cgroup %s: %w", c.name, err)
	}
	if c.cmds != "" {
		if err := write(c.cmds, "pids.max", strconv.FormatInt(lim.Pids+1, 10)); err != nil {
			return fmt.Errorf("set limits of cgroup %s: %w", c.name, err)
		}
	}
	return nil
}

func (c *Cgroup) setMemory(bytes int64) error {
	dir := c.ctl["memory"]
	n := strconv.FormatInt(bytes, 10)
	if c.v2("memory") {
		if err := write(dir, "memory.max", n); err != nil {
			return err
		}
		// Swap would let a sandbox hold more than memory.max.
		if exists(dir, "memory.swap.max") {
			return write(dir, "memory.swap.max", "0")
		}
		return nil
	}
	// memsw (memory+swap) must stay >= limit_in_bytes at every step, so it
	// is lifted first, then both are set; equal values mean swap cannot
	// extend the limit.
	memsw := exists(dir, "memory.memsw.limit_in_bytes")
	if memsw {
		if err := write(dir, "memory.memsw.limit_in_bytes", "-1"); err != nil {
			return err
		}
	}
	if err := write(dir, "memory.limit_in_bytes", n); err != nil {
		return err
	}
	if memsw {
		if err := write(dir, "memory.memsw.limit_in_bytes", n); err != nil {
			return err
		}
	}
	// oom_kill_disable=0 (the default, reset here for a reused group): with
	// it set, an over-limit sandbox would hang instead of being OOM-killed.
	return write(dir, "memory.oom_control", "0")
}

func (c *Cgroup) setCPU(quota int64) error {
	dir := c.ctl["cpu"]
	if c.v2("cpu") {
		return write(dir, "cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriod))
	}
	if err := write(dir, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
		return err
	}
	return write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

// SetIdle gives the group the CPU weight of a nice-19 process (idle) or
// the default (not idle): a warm-pool sandbox boots idle, so its refill
// takes CPU live sandboxes and the daemon do not want, and is handed out
// at the default weight. A nice value alone does not do it: it ranks
// threads within their group, and each sandbox is a group of its own, as
// heavy as any other.
func (c *Cgroup) SetIdle(idle bool) error {
	dir := c.ctl["cpu"]
	var err error
	switch {
	case c.v2("cpu") && exists(dir, "cpu.weight.nice"):
		err = write(dir, "cpu.weight.nice", map[bool]string{true: "19", false: "0"}[idle])
	case c.v2("cpu"):
		err = write(dir, "cpu.weight", map[bool]string{true: "1", false: "100"}[idle])
	default:
		// 15 is nice 19's load weight; 1024 the default.
		err = write(dir, "cpu.shares", map[bool]string{true: "15", false: "1024"}[idle])
	}
	if err != nil {
		return fmt.Errorf("cpu weight of cgroup %s: %w", c.name, err)
	}
	return nil
}
