package cgroups

import (
	"fmt"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Stats reads the group's resource use. DiskBytes is left to the caller,
// which owns the disk quota.
func (c *Cgroup) Stats() (runtime.Stats, error) {
	var s runtime.Stats
	var r reader
	if mem, ok := c.ctl["memory"]; ok {
		if c.v2("memory") {
			s.MemoryBytes = r.int(mem, "memory.current")
			if exists(mem, "memory.peak") { // since Linux 5.19
				s.MemoryPeakBytes = r.int(mem, "memory.peak")
			}
		} else {
			s.MemoryBytes = r.int(mem, "memory.usage_in_bytes")
			s.MemoryPeakBytes = r.int(mem, "memory.max_usage_in_bytes")
		}
		s.OOMKills = c.oomKills(&r, mem)
	}
	switch acct, ok := c.ctl["cpuacct"]; {
	case c.v2("cpu"):
		s.CPUSeconds = float64(r.key(c.unified, "cpu.stat", "usage_usec")) / 1e6
	case ok:
		s.CPUSeconds = float64(r.int(acct, "cpuacct.usage")) / 1e9
	case c.unified != "" && exists(c.unified, "cpu.stat"):
		// cgroup2 accounts CPU time in every group, controller or not.
		s.CPUSeconds = float64(r.key(c.unified, "cpu.stat", "usage_usec")) / 1e6
	}
	if pids, ok := c.ctl["pids"]; ok {
		s.Pids = r.int(pids, "pids.current")
	}
	if r.err != nil {
		return runtime.Stats{}, fmt.Errorf("stats of cgroup %s: %w", c.name, r.err)
	}
	return s, nil
}

// OOMKills reads only the group's count of OOM kills (0 without a memory
// controller): what every exec reads twice, before and after, to tell an
// OOM kill from any SIGKILL; one file, not Stats' five.
func (c *Cgroup) OOMKills() (int64, error) {
	mem, ok := c.ctl["memory"]
	if !ok {
		return 0, nil
	}
	var r reader
	n := c.oomKills(&r, mem)
	if r.err != nil {
		return 0, fmt.Errorf("OOM kills of cgroup %s: %w", c.name, r.err)
	}
	return n, nil
}

func (c *Cgroup) oomKills(r *reader, mem string) int64 {
	if c.v2("memory") {
		return r.key(mem, "memory.events", "oom_kill")
	}
	return r.key(mem, "memory.oom_control", "oom_kill")
}
