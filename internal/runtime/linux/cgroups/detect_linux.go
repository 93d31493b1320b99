package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/mountinfo"
)

// Version is the cgroup layout of a host.
type Version int

const (
	V1     Version = 1 // only v1 hierarchies
	V2     Version = 2 // only the unified cgroup2 tree carries controllers
	Hybrid Version = 3 // v1 controllers plus a cgroup2 tree
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	case Hybrid:
		return "hybrid"
	}
	return "unknown"
}

// Info describes the cgroup layout of this host, for placement and for
// `airlock doctor`.
type Info struct {
	Version Version
	// Unified is the mount point of the cgroup2 tree, "" when there is none.
	Unified string
	// Controllers maps each available controller to the mount point of the
	// hierarchy that offers it (Unified for a v2 controller).
	Controllers map[string]string
	// Kill and Freeze say whether child groups of the cgroup2 tree have
	// cgroup.kill and cgroup.freeze; either works even when the tree holds no
	// controller, as on hybrid hosts.
	Kill, Freeze bool
	// Writable says whether this process may create groups in every
	// hierarchy it needs.
	Writable bool
}

// needed are the controllers a sandbox group must have.
var needed = []string{"memory", "cpu", "pids"}

// Detect reads the cgroup layout from /proc/self/mountinfo. It errors, wrapping
// runtime.ErrUnsupported, only when no cgroup filesystem is mounted at all.
func Detect() (Info, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Info{}, fmt.Errorf("detect cgroups: %w", err)
	}
	mounts, err := mountinfo.Parse(data)
	if err != nil {
		return Info{}, fmt.Errorf("detect cgroups: %w", err)
	}
	var v2ctl []string
	for _, m := range mounts {
		if m.FSType == "cgroup2" {
			b, err := os.ReadFile(filepath.Join(m.Point, "cgroup.controllers"))
			if err != nil {
				return Info{}, fmt.Errorf("detect cgroups: %w", err)
			}
			v2ctl = strings.Fields(string(b))
			break
		}
	}
	info := layout(mounts, kernelControllers(), v2ctl)
	if info.Version == 0 {
		return info, fmt.Errorf("detect cgroups: no cgroup filesystem mounted: %w", runtime.ErrUnsupported)
	}
	if info.Unified != "" {
		info.Kill, info.Freeze = probeFeatures(info.Unified)
	}
	info.Writable = writable(info)
	return info, nil
}

// layout derives the version and controller placement from the mounts. known
// holds the kernel's controller names (nil accepts every v1 option), which
// tells a controller from a mount option such as "clone_children".
func layout(mounts []mountinfo.Mount, known map[string]bool, v2ctl []string) Info {
	info := Info{Controllers: map[string]string{}}
	hasV1 := false
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup2":
			if info.Unified == "" {
				info.Unified = m.Point
			}
		case "cgroup":
			for _, opt := range strings.Split(m.Super, ",") {
				if opt == "rw" || opt == "ro" || strings.Contains(opt, "=") || (known != nil && !known[opt]) {
					continue
				}
				hasV1 = true
				if _, ok := info.Controllers[opt]; !ok {
					info.Controllers[opt] = m.Point
				}
			}
		}
	}
	if info.Unified != "" {
		for _, c := range v2ctl {
			info.Controllers[c] = info.Unified
		}
	}
	switch {
	case hasV1 && info.Unified != "":
		info.Version = Hybrid
	case hasV1:
		info.Version = V1
	case info.Unified != "":
		info.Version = V2
	}
	return info
}

// kernelControllers lists the controllers this kernel has, from /proc/cgroups;
// nil when that file is missing.
func kernelControllers() map[string]bool {
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") && f[3] == "1" {
			known[f[0]] = true
		}
	}
	return known
}

// probeFeatures looks for cgroup.kill and cgroup.freeze, which only non-root
// groups have: in an existing child group if there is one, else in a probe
// group created and removed at once (only possible as root).
func probeFeatures(unified string) (kill, freeze bool) {
	has := func(dir string) (bool, bool) {
		_, k := os.Stat(filepath.Join(dir, "cgroup.kill"))
		_, f := os.Stat(filepath.Join(dir, "cgroup.freeze"))
		return k == nil, f == nil
	}
	entries, _ := os.ReadDir(unified)
	for _, e := range entries {
		if e.IsDir() {
			return has(filepath.Join(unified, e.Name()))
		}
	}
	probe := filepath.Join(unified, "airlock-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false, false
	}
	defer os.Remove(probe)
	return has(probe)
}

// writable says whether every hierarchy a sandbox group needs accepts new
// groups from this process.
func writable(info Info) bool {
	if os.Geteuid() != 0 {
		return false
	}
	c, err := plan(info, "probe")
	if err != nil {
		return false
	}
	for _, dir := range c.dirs {
		if err := unix.Access(filepath.Dir(filepath.Dir(dir)), unix.W_OK); err != nil {
			return false
		}
	}
	return true
}
