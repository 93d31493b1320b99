package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/airlockhq/airlock/internal/runtime"
)

// limitFlags are --cpus, --memory, --pids and --disk of the verbs that
// make a sandbox. Each refuses an explicit value outside the range the
// server accepts (the runtime's), 0 included: a JSON 0 means "the
// default" to the API, but a person who types --pids 0 means something
// else, and leaving the flag out is how to get the default.
type limitFlags struct {
	cpus, pids   limitFlag
	memory, disk limitFlag
}

// register adds the flags; what says whose limits they are ("" for a
// sandbox's, "the build's") and def are the defaults the help shows. A
// def.Pids of 0 leaves --pids out (a template build has no such limit).
func (l *limitFlags) register(fs *flag.FlagSet, what string, def runtime.Limits) {
	if what == "" {
		what = "the sandbox's"
	}
	l.cpus = limitFlag{min: runtime.MinCPUs, max: runtime.MaxCPUs, def: def.CPUs, frac: true}
	l.pids = limitFlag{min: runtime.MinPids, max: runtime.MaxPids, def: float64(def.Pids)}
	l.memory = limitFlag{min: runtime.MinMemoryMB, max: runtime.MaxMemoryMB, def: float64(def.MemoryMB), size: true}
	l.disk = limitFlag{min: runtime.MinDiskMB, def: float64(def.DiskMB), size: true}
	fs.Var(&l.cpus, "cpus", fmt.Sprintf("%s CPU quota of `N` cores, %g to %d (default %g)", what, runtime.MinCPUs, runtime.MaxCPUs, def.CPUs))
	fs.Var(&l.memory, "memory", fmt.Sprintf("%s memory limit, a `SIZE` such as 512M or 2G, %s to %s (default %s)", what,
		mbText(runtime.MinMemoryMB), mbText(runtime.MaxMemoryMB), mbText(def.MemoryMB)))
	if def.Pids > 0 {
		fs.Var(&l.pids, "pids", fmt.Sprintf("%s maximum number of processes, `N` from %d to %d (default %d)", what, runtime.MinPids, runtime.MaxPids, def.Pids))
	}
	fs.Var(&l.disk, "disk", fmt.Sprintf("%s writable disk limit, a `SIZE` such as 1G, at least %s (default %s)", what, mbText(runtime.MinDiskMB), mbText(def.DiskMB)))
}

// values are the limits given, 0 for those left out (the defaults).
func (l *limitFlags) values() runtime.Limits {
	return runtime.Limits{CPUs: l.cpus.v, MemoryMB: int64(l.memory.v), Pids: int64(l.pids.v), DiskMB: int64(l.disk.v)}
}

// limitFlag is one limit: a count (cpus may be fractional) or a size in
// MiB, with its range.
type limitFlag struct {
	v, min, max, def float64 // max 0: none
	raw              string
	frac, size       bool
}

func (f *limitFlag) String() string { return "" } // the defaults are in the usage text

func (f *limitFlag) Set(s string) error {
	switch {
	case f.size && s == "0":
		f.v = 0 // refused with the range by checkRange
	case f.size:
		mb, err := parseSizeMB(s)
		if err != nil {
			return fmt.Errorf("want a size such as 512M or 2G")
		}
		f.v = float64(mb)
	case f.frac:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v != v {
			return fmt.Errorf("want a number of cores such as 0.5 or 2")
		}
		f.v = v
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		f.v = float64(n)
	}
	f.raw = s
	return nil
}

func (f *limitFlag) checkRange(name string) error {
	if f.v >= f.min && (f.max == 0 || f.v <= f.max) {
		return nil
	}
	show := func(v float64) string {
		if f.size {
			return mbText(int64(v))
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	want := "at least " + show(f.min)
	if f.max > 0 {
		want = show(f.min) + " to " + show(f.max)
	}
	return fmt.Errorf("--%s %s: want %s (leave it out for the default %s)", name, f.raw, want, show(f.def))
}

// mbText writes a size in MiB the way the flags take it: 16M, 2G, 16T.
func mbText(mb int64) string {
	switch {
	case mb >= 1<<20 && mb%(1<<20) == 0:
		return fmt.Sprintf("%dT", mb>>20)
	case mb >= 1<<10 && mb%(1<<10) == 0:
		return fmt.Sprintf("%dG", mb>>10)
	}
	return fmt.Sprintf("%dM", mb)
}
