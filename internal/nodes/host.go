package nodes

import (
	"bufio"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HostCapacity is what this host offers as a node: its CPUs, memory, the
// data dir's filesystem, and maxSandboxes (0: one per 32 MiB of memory).
func HostCapacity(dataDir string, maxSandboxes int) Capacity {
	m := meminfoMB()
	c := Capacity{CPUs: goruntime.NumCPU(), MemoryMB: m["MemTotal"], Sandboxes: maxSandboxes}
	var st unix.Statfs_t
	if unix.Statfs(dataDir, &st) == nil {
		c.DiskMB = int64(st.Blocks) * st.Bsize >> 20
	}
	if c.Sandboxes == 0 {
		c.Sandboxes = int(min(max(c.MemoryMB/32, 1), 16384))
	}
	return c
}

// HostUse is this host's 1-minute load, memory in use (MemTotal less
// MemAvailable) and the data dir's disk in use; the caller counts the
// sandboxes.
func HostUse(dataDir string) Use {
	var u Use
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		u.CPUs = float64(si.Loads[0]) / (1 << unix.SI_LOAD_SHIFT)
	}
	m := meminfoMB()
	u.MemoryMB = m["MemTotal"] - m["MemAvailable"]
	var st unix.Statfs_t
	if unix.Statfs(dataDir, &st) == nil {
		u.DiskMB = int64(st.Blocks-st.Bfree) * st.Bsize >> 20
	}
	return u
}

// meminfoMB reads /proc/meminfo's kB figures, in MiB.
func meminfoMB() map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			out[k] = n >> 10
		}
	}
	return out
}
