package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
)

// Config sets up a Runtime.
type Config struct {
	// StateDir holds templates, sandboxes' writable layers and agent sockets.
	StateDir string
	// Binary is the airlock executable re-executed as each sandbox's init;
	// it must call InitMain when its first argument is InitArg. Defaults to
	// the running executable.
	Binary string
	// DiskPoolBytes is the size of the sparse image that backs sandboxes'
	// writable layers when the state directory has no project quotas.
	DiskPoolBytes int64
	// Trace, when set, receives the duration of each phase of create and
	// destroy (for `airlock bench spawn -v`).
	Trace func(phase string, d time.Duration)
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

	mu   sync.Mutex
	live map[string]*sandbox
}

var _ runtime.Runtime = (*Runtime)(nil)

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// New prepares the state directory: the base template is built on first use
// and the disk pool is mounted, so later Creates do neither.
func New(cfg Config) (*Runtime, error) {
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("%w: state directory not set", runtime.ErrInvalid)
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable: %w", err)
		}
		cfg.Binary = exe
	}
	if err := checkBinary(cfg.Binary); err != nil {
		return nil, err
	}
	if cfg.DiskPoolBytes == 0 {
		cfg.DiskPoolBytes = 64 << 30
	}
	if err := os.MkdirAll(cfg.StateDir, 0o711); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	r := &Runtime{cfg: cfg, rootless: os.Geteuid() != 0, live: map[string]*sandbox{}}
	tmpl, err := ensureBaseTemplate(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	r.tmpl = tmpl
	sbDir := r.sandboxesDir()
	if err := os.MkdirAll(sbDir, 0o711); err != nil {
		return nil, fmt.Errorf("create sandboxes dir: %w", err)
	}
	if r.rootless {
		r.quotaErr = errors.New("needs root")
		r.cgErr = errors.New("needs root")
	} else {
		r.quota, r.quotaErr = setupDiskPool(sbDir, cfg.DiskPoolBytes)
		r.cgErr = cgroupsUsable()
	}
	return r, nil
}

func (r *Runtime) sandboxesDir() string { return filepath.Join(r.cfg.StateDir, "sandboxes") }

// Teardown destroys every sandbox this runtime holds on disk and unmounts
// the disk pool. A daemon never calls it (sandboxes outlive restarts);
// tests and one-shot tools do.
func (r *Runtime) Teardown() error {
	ctx := context.Background()
	ids, err := r.List(ctx)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range ids {
		sb, err := r.Get(ctx, id)
		if err == nil {
			err = sb.Destroy(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("destroy %s: %w", id, err))
		}
	}
	if r.quota != nil {
		if err := r.quota.Close(); err != nil {
			errs = append(errs, fmt.Errorf("unmount disk pool: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Create starts a sandbox and returns once its agent answers.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	if !idPattern.MatchString(spec.ID) {
		return nil, fmt.Errorf("%w: sandbox id %q must be 1-63 of [a-z0-9-]", runtime.ErrInvalid, spec.ID)
	}
	if spec.Template != "" && spec.Template != "base" {
		return nil, fmt.Errorf("%w: template %q", runtime.ErrNotFound, spec.Template)
	}
	lim := spec.Limits.WithDefaults()
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	if err := checkCapacity(lim); err != nil {
		return nil, err
	}
	return r.create(ctx, spec, lim)
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
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("%w: sandbox %q", runtime.ErrNotFound, id)
	}
	r.mu.Lock()
	sb := r.live[id]
	r.mu.Unlock()
	if sb != nil {
		return sb, nil
	}
	return r.attach(id)
}

// List returns the ids of sandboxes whose state is on disk.
func (r *Runtime) List(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(r.sandboxesDir())
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(r.sandboxesDir(), e.Name(), stateFile)); err == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

const stateFile = "state.json"

// persisted is what a restarted daemon needs to re-attach to a sandbox.
type persisted struct {
	ID     string         `json:"id"`
	Pid    int            `json:"pid"`
	Start  uint64         `json:"start"` // the init's start time, so a recycled pid is never killed
	Slot   int            `json:"slot"`
	Limits runtime.Limits `json:"limits"`
	Cgroup bool           `json:"cgroup"`
}

func (r *Runtime) attach(id string) (*sandbox, error) {
	dir := filepath.Join(r.sandboxesDir(), id)
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, id)
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
		cg, err := cgroups.Open(id)
		if err != nil {
			return nil, fmt.Errorf("re-attach cgroup of %s: %w", id, err)
		}
		sb.cg = cg
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.live[id]; cur != nil {
		return cur, nil
	}
	r.live[id] = sb
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
