package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// Config sets up a Runtime.
type Config struct {
	// StateDir holds templates, sandboxes' writable layers and agent sockets.
	StateDir string
	// Binary is the sandbox init program executed as each sandbox's PID 1
	// (and as the spawner): cmd/airlock-init, or any program that calls
	// sbinit.Main when its first argument is sbinit.Arg. Default: the init
	// embedded in this binary (package initbin), from a sealed memfd; in
	// a binary built without it, the running executable (the whole
	// daemon: slower to start, see InitSource).
	Binary string
	// DiskPoolBytes is the size of the sparse image that backs sandboxes'
	// writable layers when the state directory has no project quotas.
	DiskPoolBytes int64
	// DieWithCaller kills each sandbox's init when the process that created
	// it dies, for one-shot callers (`airlock run`) whose crash would
	// otherwise leave sandboxes running; the next runtime on the state dir
	// then cleans up after them. A daemon leaves it unset: its sandboxes
	// outlive a restart.
	DieWithCaller bool
	// PoolSize is how many sandboxes with default settings are kept booted
	// and unclaimed, so Create only has to hand one out. 0 disables the pool.
	PoolSize int
	// SweepEvery, when set, makes the runtime look for what crashed
	// processes left in the state dir (and for host-wide leftovers of any
	// Airlock process) this often, not only when it starts.
	SweepEvery time.Duration
	// Trace, when set, receives the duration of each phase of create and
	// destroy (for `airlock bench spawn -v`).
	Trace func(phase string, d time.Duration)
	// HostRoot is where the host's root filesystem is seen, for the base
	// template (its /usr, /bin, /lib... and the /etc entries it copies):
	// "" or "/" on a host; in a container, the host's / mounted
	// read-only (the Helm chart's node DaemonSet: /host).
	HostRoot string
}

// phase times one step for Config.Trace; it returns a func that ends it.
func (r *Runtime) phase(name string) func() {
	if r.cfg.Trace == nil {
		return func() {}
	}
	t := time.Now()
	return func() { r.cfg.Trace(name, time.Since(t)) }
}

// Runtime is the Linux namespaces backend.
type Runtime struct {
	cfg      Config
	tmpl     template
	rootless bool
	quota    diskLimiter // nil when disk limits cannot be enforced
	quotaErr error
	cgErr    error // why cgroup limits are not enforced, if they are not

	pool       *pool     // nil when Config.PoolSize is 0
	act        *activity // creates, commands and destroys in flight, for the pool
	poolLock   *os.File  // flock held while this process owns the pool
	spawner    *spawners // fork the inits, so that this process never does
	bin        *os.File  // the init program, open for every init's exec (initExec)
	initSource string    // where bin came from (InitSource)

	mu   sync.Mutex
	live map[string]*sandbox // by public id

	volMu sync.Mutex // volume records and mounts (volumes_linux.go)

	sweepStop chan struct{} // closed by Close to end the sweeper, if one runs
	sweepDone chan struct{}
}

var _ runtime.Runtime = (*Runtime)(nil)

// validID: 1-63 of [a-z0-9-], not starting with '-'. (Plain loops, not
// regexp: the sandbox init is this binary too, and every package-level
// regexp costs each sandbox's start.)
func validID(s string) bool {
	return validName(s, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' })
}

// validHostname: 1-63 of [A-Za-z0-9.-], not starting with '-' or '.'.
func validHostname(s string) bool {
	return s[0] != '.' && validName(s, func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
	})
}

func validName(s string, ok func(byte) bool) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// New prepares the state directory: the base template is built on first use
// and the disk pool is mounted, so later Creates do neither.
func New(cfg Config) (_ *Runtime, err error) {
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("%w: state directory not set", runtime.ErrInvalid)
	}
	if cfg.DiskPoolBytes == 0 {
		cfg.DiskPoolBytes = 64 << 30
	}
	if err := os.MkdirAll(cfg.StateDir, 0o711); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	if err := checkTraversable(cfg.StateDir); err != nil {
		return nil, err
	}
	bin, source, err := openInit(cfg.Binary)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			bin.Close()
		}
	}()
	r := &Runtime{cfg: cfg, rootless: os.Geteuid() != 0, live: map[string]*sandbox{}, bin: bin, initSource: source, act: newActivity()}
	// The spawners, like each init, are executed through the open file:
	// for a memfd there is no other path.
	r.spawner = newSpawners(fmt.Sprintf("/proc/self/fd/%d", bin.Fd()), r.phase)
	tmpl, err := ensureBaseTemplate(cfg.StateDir, cfg.HostRoot)
	if err != nil {
		return nil, err
	}
	r.tmpl = tmpl
	r.collectTemplates()
	sbDir := r.sandboxesDir()
	for _, d := range []string{sbDir, r.idsDir()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("create state dirs: %w", err)
		}
	}
	if r.rootless {
		r.quotaErr = errors.New("needs root")
		r.cgErr = errors.New("needs root")
	} else {
		r.quota, r.quotaErr = setupDiskPool(sbDir, cfg.DiskPoolBytes)
		r.cgErr = cgroupsUsable()
	}
	r.reap(false)
	if cfg.PoolSize > 0 {
		// One pool owner per state dir: the lock is held for the life of
		// this process, so pool sandboxes found unclaimed while holding it
		// belong to an owner that is gone.
		lock, err := os.OpenFile(filepath.Join(cfg.StateDir, "pool.lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("pool lock: %w", err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
			return nil, fmt.Errorf("%w: another process keeps a warm pool in %s", runtime.ErrConflict, cfg.StateDir)
		}
		r.poolLock = lock
		r.reap(true)
		r.pool = newPool(r, cfg.PoolSize)
	}
	if cfg.SweepEvery > 0 {
		r.sweepStop, r.sweepDone = make(chan struct{}), make(chan struct{})
		go r.sweeper(cfg.SweepEvery)
	}
	return r, nil
}

// Close stops the warm pool and destroys its unclaimed sandboxes. Claimed
// sandboxes keep running: a restarted daemon re-attaches to them.
func (r *Runtime) Close() error {
	if r.sweepStop != nil {
		close(r.sweepStop)
		<-r.sweepDone
		r.sweepStop = nil
	}
	if r.pool == nil {
		r.spawner.close()
		r.bin.Close()
		return nil
	}
	defer r.bin.Close()
	defer r.spawner.close() // after the pool: its last boots use it
	err := r.pool.close()
	r.poolLock.Close()
	return err
}

func (r *Runtime) sandboxesDir() string { return filepath.Join(r.cfg.StateDir, "sandboxes") }

// cached returns this runtime's handle of the sandbox in directory name
// (the one holding its init as a child, if any), else attaches to it.
func (r *Runtime) cached(name string) (*sandbox, error) {
	r.mu.Lock()
	for _, sb := range r.live {
		if sb.p.Name == name {
			r.mu.Unlock()
			return sb, nil
		}
	}
	r.mu.Unlock()
	return r.attach(name)
}

// Teardown destroys every sandbox this runtime holds on disk and unmounts
// the disk pool. A daemon never calls it (sandboxes outlive restarts);
// tests and one-shot tools do.
func (r *Runtime) Teardown() error {
	ctx := context.Background()
	var errs []error
	errs = append(errs, r.Close())
	// Every sandbox on disk, not only the registered ids: unclaimed pool
	// sandboxes of a process that died are torn down too.
	entries, err := os.ReadDir(r.sandboxesDir())
	if err != nil {
		errs = append(errs, err)
	}
	var slots map[string]slotEntry
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var sb *sandbox
		if sb, err = r.cached(e.Name()); err == nil {
			err = sb.Destroy(ctx)
		} else if errors.Is(err, runtime.ErrNotFound) {
			if slots == nil {
				slots = scanSlots()
			}
			err = r.reclaimStateless(e.Name(), slots)
		}
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("destroy %s: %w", e.Name(), err))
		}
	}
	errs = append(errs, r.unmountDiskPool())
	return errors.Join(errs...)
}

// unmountDiskPool unmounts the disk pool and waits for its loop device to
// detach.
func (r *Runtime) unmountDiskPool() error {
	if r.quota == nil {
		return nil
	}
	if err := r.quota.Close(); err != nil {
		return fmt.Errorf("unmount disk pool: %w", err)
	}
	return r.quota.WaitDetached(5 * time.Second)
}

// ReleaseDiskPool unmounts the disk pool (and frees its loop device) if no
// sandbox is left on it: for a server's shutdown, after Close has
// destroyed its warm pool. While a sandbox lives it stays mounted, since
// the sandbox's layer is on it: a restarted server re-attaches to the
// mounted pool, where mounting the image again beside the live filesystem
// would give two loop devices of one btrfs.
func (r *Runtime) ReleaseDiskPool() (released bool, err error) {
	entries, err := os.ReadDir(r.sandboxesDir())
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			return false, nil
		}
	}
	return r.quota != nil, r.unmountDiskPool()
}

// TeardownStateDir destroys every sandbox of the state dir and unmounts
// its disk pool, for operators and tests (`airlock teardown`). It refuses
// while another process keeps its warm pool there, as a running server
// does: stopping that server first is the operator's choice, not ours.
func TeardownStateDir(stateDir string) (destroyed int, err error) {
	if _, err := os.Stat(stateDir); err != nil {
		return 0, fmt.Errorf("%w: data dir %s: %v", runtime.ErrNotFound, stateDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, "pool.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("pool lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return 0, fmt.Errorf("%w: a server is running on %s (it keeps its warm pool there): stop it first", runtime.ErrConflict, stateDir)
	}
	r, err := New(Config{StateDir: stateDir})
	if err != nil {
		return 0, err
	}
	entries, _ := os.ReadDir(r.sandboxesDir())
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			destroyed++
		}
	}
	return destroyed, r.Teardown()
}

// Create starts a sandbox and returns once its agent answers.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	defer r.act.begin()()
	if !validID(spec.ID) {
		return nil, fmt.Errorf("%w: sandbox id %q must be 1-63 of [a-z0-9-]", runtime.ErrInvalid, spec.ID)
	}
	tmplDir, err := r.resolveTemplate(spec.Template)
	if err != nil {
		return nil, err
	}
	if spec.Build && r.rootless {
		return nil, fmt.Errorf("%w: template builds need the server to run as root", runtime.ErrInvalid)
	}
	lim := spec.Limits.WithDefaults()
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	if err := checkCapacity(lim); err != nil {
		return nil, err
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%w: environment variable %q", runtime.ErrInvalid, k)
		}
	}
	if spec.Hostname != "" && !validHostname(spec.Hostname) {
		return nil, fmt.Errorf("%w: hostname %q", runtime.ErrInvalid, spec.Hostname)
	}
	if spec.Workdir != "" && !filepath.IsAbs(spec.Workdir) {
		return nil, fmt.Errorf("%w: workdir %q must be absolute", runtime.ErrInvalid, spec.Workdir)
	}
	if _, err := os.Lstat(filepath.Join(r.idsDir(), spec.ID)); err == nil {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrConflict, spec.ID)
	}
	if sb := r.pool.take(spec, lim); sb != nil {
		defer creating.remove(sb.dir)
		var err error
		if sb.cg != nil {
			err = sb.cg.SetIdle(false)
		}
		if err == nil {
			err = sbinit.Unidle(sb.p.Pid)
		}
		if err == nil {
			err = r.bind(ctx, sb, spec, lim)
		}
		if err != nil {
			sb.destroy()
			return nil, err
		}
		return sb, nil
	}
	host := spec.Hostname
	if host == "" {
		host = defaultHostname
	}
	if spec.Snapshot != "" {
		st, err := r.snapshotState(spec.Snapshot)
		if err != nil {
			return nil, err
		}
		if st.Template != tmplDir || spec.Build {
			return nil, fmt.Errorf("%w: snapshot %s was taken on template %q, not %q", runtime.ErrInvalid, spec.Snapshot, st.TemplateName, spec.Template)
		}
	}
	lay := layering{Template: tmplDir, Build: spec.Build, Snapshot: spec.Snapshot, Volumes: spec.Volumes}
	if it, ok := r.imageTemplate(tmplDir); ok {
		if spec.Build {
			return nil, fmt.Errorf("%w: template %s is an image: builds add to base's /usr/local", runtime.ErrInvalid, spec.Template)
		}
		lay.Image = true
		spec.Env = imageEnv(it.Env, spec.Env)
		if spec.Workdir == "" && path.IsAbs(it.Workdir) && it.Workdir != "/" {
			spec.Workdir = it.Workdir
		}
	}
	if tmplDir != "" {
		lay.TemplateName = spec.Template
	}
	dir := filepath.Join(r.sandboxesDir(), spec.ID)
	creating.add(dir)
	defer creating.remove(dir)
	sb, err := r.boot(ctx, spec.ID, lim, host, lay)
	if err != nil {
		return nil, err
	}
	if err := r.bind(ctx, sb, spec, lim); err != nil {
		sb.destroy()
		return nil, err
	}
	return sb, nil
}

// checkCapacity refuses limits no sandbox on this host could use.
func checkCapacity(lim runtime.Limits) error {
	if lim.CPUs > float64(goruntime.NumCPU()) {
		return fmt.Errorf("%w: %g cpus requested, host has %d", runtime.ErrInvalid, lim.CPUs, goruntime.NumCPU())
	}
	var kb int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
	}
	if kb > 0 && lim.MemoryMB<<10 > kb {
		return fmt.Errorf("%w: %d MiB memory requested, host has %d MiB", runtime.ErrInvalid, lim.MemoryMB, kb>>10)
	}
	return nil
}

// Get re-attaches to a sandbox by id, including one created by an earlier
// process of the daemon.
func (r *Runtime) Get(ctx context.Context, id string) (runtime.Sandbox, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%w: sandbox %q", runtime.ErrNotFound, id)
	}
	r.mu.Lock()
	sb := r.live[id]
	r.mu.Unlock()
	if sb != nil {
		return sb, nil
	}
	name, err := os.Readlink(filepath.Join(r.idsDir(), id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("look up sandbox %s: %w", id, err)
	}
	sb, err = r.attach(name)
	if err != nil {
		return nil, err
	}
	if sb.p.ID != id {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.live[id]; cur != nil {
		return cur, nil
	}
	r.live[id] = sb
	return sb, nil
}

// List returns the ids of the sandboxes handed out (the warm pool is not
// listed).
func (r *Runtime) List(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(r.idsDir())
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids, nil
}

func (r *Runtime) idsDir() string { return filepath.Join(r.cfg.StateDir, "ids") }

const stateFile = "state.json"

// persisted is what a restarted daemon needs to re-attach to a sandbox.
type persisted struct {
	ID     string         `json:"id"`   // public id, "" while in the warm pool
	Name   string         `json:"name"` // directory and cgroup name
	Pid    int            `json:"pid"`
	Start  uint64         `json:"start"` // the init's start time, so a recycled pid is never killed
	Slot   int            `json:"slot"`
	Limits runtime.Limits `json:"limits"`
	Cgroup bool           `json:"cgroup"`
	// CgroupName is the group's name ("" for sandboxes made before groups
	// were named after the uid range: their name is Name).
	CgroupName string            `json:"cgroup_name,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Workdir    string            `json:"workdir,omitempty"`
	// Template is the built template's directory under templates/ ("" for
	// base), TemplateName its name; Build marks a template build.
	Template     string `json:"template,omitempty"`
	TemplateName string `json:"template_name,omitempty"`
	Build        bool   `json:"build,omitempty"`
	// Volumes are the volumes it mounts.
	Volumes []runtime.VolumeMount `json:"volumes,omitempty"`
	// Owners is where the ids of a snapshot imported from another node
	// start (0: as inside the sandbox); nil for a sandbox's own.
	Owners *int `json:"owners,omitempty"`
}

func (p persisted) cgroup() string {
	if p.CgroupName != "" {
		return p.CgroupName
	}
	return p.Name
}

// attach loads a sandbox from its directory.
func (r *Runtime) attach(name string) (*sandbox, error) {
	dir := filepath.Join(r.sandboxesDir(), name)
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read sandbox state: %w", err)
	}
	var p persisted
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("read sandbox state: %w", err)
	}
	sb := newSandbox(r, p, dir)
	if p.Cgroup {
		cg, err := cgroups.Open(p.cgroup())
		if err != nil {
			return nil, fmt.Errorf("re-attach cgroup of %s: %w", name, err)
		}
		sb.cg = cg
	}
	return sb, nil
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	delete(r.live, id)
	r.mu.Unlock()
}

// cgroupsUsable says why sandboxes cannot get cgroup limits, or nil.
func cgroupsUsable() error {
	info, err := cgroups.Detect()
	if err != nil {
		return err
	}
	if !info.Writable {
		return errors.New("cgroup hierarchies are not writable by this process")
	}
	for _, c := range []string{"memory", "cpu", "pids"} {
		if info.Controllers[c] == "" {
			return fmt.Errorf("no %s controller", c)
		}
	}
	return nil
}

// checkBinary refuses a binary that links cgo: its sandbox init could not
// set capabilities, no_new_privs and landlock on every thread
// (syscall.AllThreadsSyscall answers ENOTSUP under cgo). Only the running
// binary can be checked cheaply; a different Binary is trusted as built.
func checkBinary(bin string) error {
	self, err := os.Executable()
	if err != nil || self != bin {
		return nil
	}
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_GETPID, 0, 0, 0); e == syscall.ENOTSUP {
		return errors.New("this airlock binary links cgo and cannot lock down sandboxes: build it with CGO_ENABLED=0")
	}
	return nil
}

// checkTraversable makes sure a sandbox's root, an unprivileged host uid,
// can reach its layers under dir: every directory above it must be
// searchable by others.
func checkTraversable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%w: state dir %s is below %s, which other users cannot traverse (chmod o+x it or pick another --data-dir)", runtime.ErrInvalid, abs, d)
		}
		if d == "/" {
			return nil
		}
	}
}
