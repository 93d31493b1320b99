package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Parent is the group, directly under each hierarchy's mount point, that
// holds every sandbox group. It is created once and never removed.
const Parent = "airlock"

// Commands names the subgroup a sandbox's commands run in, under its
// group in a v1 pids hierarchy (v1 places each thread on its own). The
// init puts the one thread it forks every command from there, so its
// commands, and what they fork, count against the subgroup's pids limit
// alone, and the init's other threads against the group's: a fork bomb
// fills the subgroup and the agent can still start the threads it needs.
// Where pids is a v2 controller no subgroup is made, and the init keeps
// InitPids threads started instead (see sbinit.Config.ReserveThreads).
const Commands = "commands"

// InitPids is what a sandbox group's pids limit holds beyond its commands'
// limit: the threads of its init (the agent). The Go runtime ends a
// program that cannot start a thread it needs.
const InitPids = 16

// ErrInUse is returned by New when a group of that name still holds
// processes: it belongs to a live sandbox and must not be clobbered.
var ErrInUse = errors.New("cgroup in use")

// validName: 1-64 of [a-z0-9-] (a loop, not a regexp: package-level
// regexps cost every sandbox init's start, which links this package).
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// detected caches the host layout: mounts do not move under a running daemon,
// and probing on every sandbox creation would cost a mkdir.
var detected = sync.OnceValues(Detect)

// Cgroup is one sandbox's group in every hierarchy it needs. Its fields are
// set once, so its methods may be called from several goroutines.
type Cgroup struct {
	name    string
	unified string            // group in the cgroup2 tree, "" when none
	ctl     map[string]string // controller -> group directory
	dirs    []string          // every distinct group directory, unified first
	cmds    string            // the Commands subgroup of a v1 pids group, "" when none
	kill    bool              // unified group has cgroup.kill
	freeze  bool              // unified group has cgroup.freeze
}

// plan decides where the group called name lives, without touching anything.
func plan(info Info, name string) (*Cgroup, error) {
	c := &Cgroup{name: name, ctl: map[string]string{}}
	rel := filepath.Join(Parent, name)
	if info.Unified != "" {
		// Even a cgroup2 tree without controllers is used: its cgroup.kill
		// and cgroup.freeze close the fork race that v1 cannot.
		c.unified = filepath.Join(info.Unified, rel)
		c.dirs = append(c.dirs, c.unified)
	}
	add := func(ctl, mnt string) {
		d := filepath.Join(mnt, rel)
		c.ctl[ctl] = d
		if !slices.Contains(c.dirs, d) {
			c.dirs = append(c.dirs, d)
		}
	}
	for _, n := range needed {
		m, ok := info.Controllers[n]
		if !ok {
			return nil, fmt.Errorf("cgroup controller %s not available: %w", n, runtime.ErrUnsupported)
		}
		add(n, m)
	}
	if m, ok := info.Controllers["cpuacct"]; ok && !c.v2("cpu") {
		add("cpuacct", m)
	}
	if m, ok := info.Controllers["freezer"]; ok && !info.Kill && !info.Freeze {
		add("freezer", m)
	}
	if !c.v2("pids") {
		c.cmds = filepath.Join(c.ctl["pids"], Commands)
	}
	return c, nil
}

// v2 says whether ctl is served by the unified tree.
func (c *Cgroup) v2(ctl string) bool {
	return c.unified != "" && c.ctl[ctl] == c.unified
}

func checkName(name string) error {
	if !validName(name) {
		return fmt.Errorf("cgroup name %q: must match [a-z0-9-]{1,64}: %w", name, runtime.ErrInvalid)
	}
	return nil
}

// New creates the group for one sandbox and writes lim (zero fields take the
// defaults). An existing group of that name is reused only when it is empty.
// On failure nothing it created is left behind.
func New(name string, lim runtime.Limits) (*Cgroup, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	info, err := detected()
	if err != nil {
		return nil, err
	}
	return create(info, name, lim)
}

func create(info Info, name string, lim runtime.Limits) (*Cgroup, error) {
	c, err := plan(info, name)
	if err != nil {
		return nil, err
	}
	if err := c.enableV2(info.Unified); err != nil {
		return nil, err
	}
	var created []string
	fail := func(err error) (*Cgroup, error) {
		for _, d := range slices.Backward(created) {
			rmdir(d)
		}
		return nil, fmt.Errorf("create cgroup %s: %w", name, err)
	}
	for _, d := range c.groups() {
		if err := os.Mkdir(filepath.Dir(d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fail(err)
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			created = append(created, d)
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return fail(err)
		}
		pids, err := readProcs(d)
		if err != nil {
			return fail(err)
		}
		if len(pids) > 0 {
			return fail(fmt.Errorf("%s holds %d processes: %w", d, len(pids), ErrInUse))
		}
	}
	c.features()
	if err := c.SetLimits(lim); err != nil {
		return fail(err)
	}
	return c, nil
}

// Open re-attaches to the groups of a sandbox created earlier, for example by
// a daemon that restarted. It attaches to whatever part exists, so that a
// half-created group can still be destroyed, and wraps runtime.ErrNotFound
// when nothing does.
func Open(name string) (*Cgroup, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	info, err := detected()
	if err != nil {
		return nil, err
	}
	c, err := plan(info, name)
	if err != nil {
		return nil, err
	}
	var present []string
	for _, d := range c.dirs {
		if _, err := os.Stat(d); err == nil {
			present = append(present, d)
		}
	}
	if len(present) == 0 {
		return nil, fmt.Errorf("open cgroup %s: %w", name, runtime.ErrNotFound)
	}
	for k, d := range c.ctl {
		if !slices.Contains(present, d) {
			delete(c.ctl, k)
		}
	}
	if !slices.Contains(present, c.unified) {
		c.unified = ""
	}
	if _, err := os.Stat(c.cmds); err != nil {
		c.cmds = ""
	}
	c.dirs = present
	c.features()
	return c, nil
}

func (c *Cgroup) features() {
	if c.unified != "" {
		c.kill = exists(c.unified, "cgroup.kill")
		c.freeze = exists(c.unified, "cgroup.freeze")
	}
}

// enableV2 turns on, in the tree root and in Parent, the controllers the
// group takes from the unified tree: v2 only offers a child the controllers
// enabled in its parent's cgroup.subtree_control.
func (c *Cgroup) enableV2(unified string) error {
	var ctls []string
	for _, n := range needed {
		if c.v2(n) {
			ctls = append(ctls, n)
		}
	}
	if len(ctls) == 0 {
		return nil
	}
	parent := filepath.Join(unified, Parent)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create cgroup parent: %w", err)
	}
	for _, dir := range []string{unified, parent} {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return fmt.Errorf("enable controllers: %w", err)
		}
		on := strings.Fields(string(b))
		for _, ctl := range ctls {
			if slices.Contains(on, ctl) {
				continue
			}
			// EBUSY here means dir holds processes itself (a v2 group may
			// not both hold processes and delegate controllers).
			if err := write(dir, "cgroup.subtree_control", "+"+ctl); err != nil {
				return fmt.Errorf("enable controllers: %w", err)
			}
		}
	}
	return nil
}

// Name is the sandbox name the group was created with.
func (c *Cgroup) Name() string { return c.name }

// Unified is the group's directory in the cgroup2 tree ("" when the host has
// none), for callers that start processes directly inside it with
// CLONE_INTO_CGROUP; on v1 and hybrid hosts they must still call Add.
func (c *Cgroup) Unified() string { return c.unified }

// groups are the group's directories, parents before the Commands
// subgroup.
func (c *Cgroup) groups() []string {
	if c.cmds == "" {
		return c.dirs
	}
	return append(slices.Clip(c.dirs), c.cmds)
}

// CommandTasks is the tasks file of the group's Commands subgroup, ""
// when it has none: a thread that writes "0" to it moves there alone.
func (c *Cgroup) CommandTasks() string {
	if c.cmds == "" {
		return ""
	}
	return filepath.Join(c.cmds, "tasks")
}

// Add moves the whole thread group of pid into the group in every
// hierarchy. Children it forks before Add may stay outside, so callers add a
// process before it runs untrusted code.
func (c *Cgroup) Add(pid int) error {
	// The daemon in a sandbox group would share its limits and die with
	// its Kill.
	if pid <= 0 || pid == os.Getpid() {
		return fmt.Errorf("add pid %d to cgroup %s: %w", pid, c.name, runtime.ErrInvalid)
	}
	for _, d := range c.dirs {
		if err := write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("add pid %d to cgroup %s: %w", pid, c.name, err)
		}
	}
	return nil
}

// Procs lists the processes (thread group ids) in the group, sorted. It takes
// the union over every hierarchy so a process half-added is still found.
func (c *Cgroup) Procs() ([]int, error) {
	var all []int
	for _, d := range c.dirs {
		pids, err := readProcs(d)
		if err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", c.name, err)
		}
		all = append(all, pids...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// Destroy kills every process in the group and removes its directories. It is
// idempotent. Parent stays.
func (c *Cgroup) Destroy() error {
	if err := c.Kill(); err != nil {
		return fmt.Errorf("destroy cgroup %s: %w", c.name, err)
	}
	var errs []error
	// The subgroup first: a v1 group with a child cannot be removed.
	for _, d := range slices.Backward(c.groups()) {
		if err := rmdir(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroy cgroup %s: %w", c.name, err)
	}
	return nil
}

// rmdir removes one group, retrying EBUSY: the last task of a killed group
// can leave it a moment after cgroup.procs reads empty.
func rmdir(dir string) error {
	for i := 0; ; i++ {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && i < 100:
			time.Sleep(time.Duration(i+1) * time.Millisecond)
		default:
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
}

// Find lists the sandbox groups, in any hierarchy, whose names end in
// suffix: for a reclaimer that knows a sandbox but not its group's full
// name.
func Find(suffix string) []string {
	info, err := detected()
	if err != nil {
		return nil
	}
	roots := slices.Collect(maps.Values(info.Controllers))
	if info.Unified != "" {
		roots = append(roots, info.Unified)
	}
	var out []string
	for _, root := range roots {
		entries, _ := os.ReadDir(filepath.Join(root, Parent))
		for _, e := range entries {
			if e.IsDir() && strings.HasSuffix(e.Name(), suffix) && validName(e.Name()) && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out
}
