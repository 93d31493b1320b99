package linux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
)

type sandbox struct {
	r      *Runtime
	p      persisted
	dir    string
	slot   slot
	cg     *cgroups.Cgroup
	proc   *os.Process // set when this process started the init (its child)
	client *agent.Client

	destroyOnce sync.Once
	killOnce    sync.Once // killInit, by destroy or a template commit
	destroyErr  error

	jobsMu       sync.Mutex
	agentVersion int // the agent's protocol version once asked (jobs_linux.go)
	jobOOM       map[int]oomMark
}

var _ runtime.Sandbox = (*sandbox)(nil)

func newSandbox(r *Runtime, p persisted, dir string) *sandbox {
	return &sandbox{r: r, p: p, dir: dir, slot: slot{n: p.Slot}, client: agent.Dial(filepath.Join(dir, "agent.sock"))}
}

func (s *sandbox) ID() string { return s.p.ID }

// InitPid is the host pid of the sandbox's init, for tests and diagnostics.
func (s *sandbox) InitPid() int { return s.p.Pid }

func (s *sandbox) save() error {
	b, err := json.Marshal(s.p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save sandbox state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, stateFile))
}

type process struct {
	p         *agent.Process
	sb        *sandbox
	oomBefore int64
	end       func() // its activity (Runtime.act), ended by Wait
}

func (p *process) Pid() int { return p.p.Pid() }

var _ runtime.Resizer = (*process)(nil)

// Resize changes the terminal size of a process started with a TTY.
func (p *process) Resize(size runtime.TTYSize) error { return p.p.Resize(size) }

func (p *process) Wait() (runtime.ExitStatus, error) {
	st, err := p.p.Wait()
	p.end()
	if err != nil {
		return st, err
	}
	// An OOM kill looks like any SIGKILL (and a shell in between turns it
	// into exit 137); the cgroup's counter says whether the kernel's OOM
	// killer struck while this process ran.
	if p.sb.cg != nil {
		if n, err := p.sb.cg.OOMKills(); err == nil && n > p.oomBefore {
			st.OOMKilled = true
		}
	}
	return st, nil
}

func (s *sandbox) Start(ctx context.Context, req runtime.ExecRequest) (runtime.Process, error) {
	return s.start(ctx, req, s.r.act.begin())
}

// start starts a command whose activity end ends (a no-op for the
// pool's own warm-up command, which must not hold off its refills).
func (s *sandbox) start(ctx context.Context, req runtime.ExecRequest, end func()) (runtime.Process, error) {
	req = s.withDefaults(req)
	var before int64
	if s.cg != nil {
		if n, err := s.cg.OOMKills(); err == nil {
			before = n
		}
	}
	p, err := s.client.Start(ctx, req)
	if err != nil {
		end()
		return nil, s.wrap(err)
	}
	return &process{p: p, sb: s, oomBefore: before, end: end}, nil
}

// withDefaults gives req the sandbox's own environment and workdir, which
// apply to every process; the request's win.
func (s *sandbox) withDefaults(req runtime.ExecRequest) runtime.ExecRequest {
	if len(s.p.Env) > 0 {
		env := make(map[string]string, len(s.p.Env)+len(req.Env))
		for k, v := range s.p.Env {
			env[k] = v
		}
		for k, v := range req.Env {
			env[k] = v
		}
		req.Env = env
	}
	if req.Cwd == "" {
		req.Cwd = s.p.Workdir
	}
	return req
}

func (s *sandbox) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.ExitStatus, error) {
	p, err := s.Start(ctx, req)
	if err != nil {
		return runtime.ExitStatus{}, err
	}
	return p.Wait()
}

// wrap tells "the sandbox is gone" apart from an operation's own error.
func (s *sandbox) wrap(err error) error {
	if err == nil {
		return nil
	}
	if _, statErr := os.Stat(filepath.Join(s.dir, stateFile)); errors.Is(statErr, fs.ErrNotExist) {
		return fmt.Errorf("%w: sandbox %s: %v", runtime.ErrNotFound, s.p.ID, err)
	}
	return err
}

func (s *sandbox) Signal(ctx context.Context, pid, sig int) error {
	return s.wrap(s.client.Signal(ctx, pid, sig, false))
}

func (s *sandbox) ReadFile(ctx context.Context, path string, w io.Writer) (int64, error) {
	n, err := s.client.ReadFile(ctx, path, w)
	return n, s.wrap(err)
}

func (s *sandbox) WriteFile(ctx context.Context, path string, r io.Reader, mode fs.FileMode) (int64, error) {
	n, err := s.client.WriteFile(ctx, path, r, mode)
	return n, s.wrap(err)
}

func (s *sandbox) Stat(ctx context.Context, path string) (runtime.FileInfo, error) {
	fi, err := s.client.Stat(ctx, path)
	return fi, s.wrap(err)
}

func (s *sandbox) ListDir(ctx context.Context, path string) ([]runtime.FileInfo, error) {
	l, err := s.client.ListDir(ctx, path)
	return l, s.wrap(err)
}

func (s *sandbox) MkdirAll(ctx context.Context, path string, mode fs.FileMode) error {
	return s.wrap(s.client.MkdirAll(ctx, path, mode))
}

func (s *sandbox) Remove(ctx context.Context, path string, recursive bool) error {
	return s.wrap(s.client.Remove(ctx, path, recursive))
}

func (s *sandbox) Rename(ctx context.Context, from, to string) error {
	return s.wrap(s.client.Rename(ctx, from, to))
}

func (s *sandbox) Stats(ctx context.Context) (runtime.Stats, error) {
	var st runtime.Stats
	if s.cg != nil {
		var err error
		if st, err = s.cg.Stats(); err != nil {
			return st, fmt.Errorf("sandbox %s stats: %w", s.p.ID, err)
		}
		// The group's tasks less the agent's threads (see cgroups.InitPids):
		// what the sandbox's pids limit bounds.
		if n := s.initThreads(); n > 0 {
			st.Pids = max(st.Pids-int64(n), 0)
		}
	}
	if s.r.quota != nil && s.p.Slot >= 0 {
		if used, err := s.r.quota.Usage(s.slot.projectID()); err == nil {
			st.DiskBytes = used
		}
	}
	return st, nil
}

// Destroy kills every process of the sandbox and removes its cgroup, disk
// limit, uid range claim and directory. The mounts die with its mount
// namespace, which exists only as long as one of its processes does.
func (s *sandbox) Destroy(ctx context.Context) error {
	defer s.r.act.begin()()
	s.destroyOnce.Do(func() { s.destroyErr = s.destroy() })
	return s.destroyErr
}

// killInit kills the init, and with it every process of the sandbox, and
// waits for them; the sandbox's directory and cgroup stay.
func (s *sandbox) killInit() {
	// A paused sandbox's tasks do not die until thawed (v1 freezer): the
	// kill lands first, so nothing runs again but to exit.
	thaw := func() {
		if s.cg != nil && s.cg.Frozen() {
			s.cg.Thaw()
		}
	}
	if s.proc != nil {
		s.proc.Kill() // by pidfd: never a recycled pid
		thaw()
		s.proc.Wait()
	} else if s.p.Pid > 0 && procStart(s.p.Pid) == s.p.Start {
		// Not our child (its daemon restarted): a zombie is dead enough,
		// since the kernel reaps every other process of its pid namespace
		// before the init's exit completes, and its reaper (pid 1, or a
		// subreaper) may take its time. Waiting for the zombie to go cost
		// each destroy after a restart a second.
		syscall.Kill(s.p.Pid, syscall.SIGKILL)
		thaw()
		for i := 0; i < 500 && procAlive(s.p.Pid, s.p.Start); i++ {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

func (s *sandbox) destroy() error {
	var errs []error
	if s.p.ID != "" {
		// Unregister first: from here on the id is gone for every caller.
		if err := os.Remove(filepath.Join(s.r.idsDir(), s.p.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unregister id: %w", err))
		}
		s.r.forget(s.p.ID)
	}
	// When PID 1 of a pid namespace dies the kernel kills every other
	// process in it and reaps them before the init's own exit completes;
	// every process of the sandbox is in that namespace (setns and
	// namespace-creating clones are filtered). So waiting for the init is
	// waiting for all of them.
	// Hold the uid range through the cleanup below (see slotRecord).
	s.slot.takeBack(s.p.Pid, s.p.Start)
	end := s.r.phase("destroy: kill init and wait")
	s.killOnce.Do(s.killInit)
	end()
	if s.cg != nil {
		// Kills whatever might still be in the group (nothing, unless the
		// init's wait above gave up), then removes it.
		end := s.r.phase("destroy: remove cgroup")
		err := s.cg.Destroy()
		end()
		if err != nil {
			errs = append(errs, fmt.Errorf("destroy cgroup: %w", err))
		}
	}
	end = s.r.phase("destroy: clear disk limit")
	if s.r.quota != nil && s.p.Slot >= 0 {
		if err := s.r.quota.Clear(s.slot.projectID()); err != nil {
			errs = append(errs, fmt.Errorf("clear disk limit: %w", err))
		}
	}
	end()
	end = s.r.phase("destroy: remove files")
	err := removeLayer(s.dir)
	end()
	if err != nil {
		errs = append(errs, fmt.Errorf("remove sandbox dir: %w", err))
	}
	// The registry frees the range only once the init is gone too (see
	// slotRecord), so this cannot hand it out while a process of it lives.
	s.slot.release(s.dir)
	if s.p.Template != "" && err == nil {
		// It may have been the last sandbox on a replaced or deleted
		// template's layer.
		s.r.collectTemplates()
	}
	return errors.Join(errs...)
}

// procAlive reports whether the process pid started at start is still
// running: not gone, not a zombie, not a recycled pid.
func procAlive(pid int, start uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' && procStart(pid) == start
}

// procStart returns a process's start time in clock ticks since boot, or 0
// when it does not exist. A pid together with its start time names one
// process for good; a pid alone may have been handed to another.
// initThreads is the number of threads of the sandbox's init (its
// agent), or 0 when the init is gone.
func (s *sandbox) initThreads() int {
	f := procStat(s.p.Pid)
	if len(f) < 20 {
		return 0
	}
	if start, _ := strconv.ParseUint(f[19], 10, 64); start != s.p.Start {
		return 0
	}
	n, _ := strconv.Atoi(f[17])
	return n
}

// procStat is /proc/PID/stat's fields after the parenthesised command
// name (so f[0] is field 3, the state), or nil.
func procStat(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func procStart(pid int) uint64 {
	// The start time is field 22.
	f := procStat(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// removeLayer removes a sandbox's directory. The overlay leaves its work dir
// mode 000: root removes it anyway, a rootless runtime must first make such
// directories its own again. The sandbox is dead by now, so nothing inside
// can swap a directory for a symlink (and WalkDir does not follow them).
func removeLayer(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
