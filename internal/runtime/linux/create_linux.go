package linux

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// sandboxUID is the user sandboxed commands run as, inside the namespace.
const sandboxUID = 1000

// defaultEnv is the environment every process starts from.
var defaultEnv = map[string]string{
	"PATH":    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME":    "/home/user",
	"USER":    "user",
	"LOGNAME": "user",
	"SHELL":   "/bin/bash",
	"LANG":    "C.UTF-8",
}

// layering is what a sandbox adds to the base template: a built
// template's layer, or a writable /usr/local for a template build.
type layering struct {
	Template     string // the template's build directory under templates/, "" for base
	TemplateName string // its name
	Build        bool
	// Idle boots at the lowest priority: a warm-pool sandbox, whose boot
	// must not take CPU from live work (sbinit.AtIdle).
	Idle bool
	// Snapshot is the snapshot whose writable layer the sandbox starts
	// with (snapshot_linux.go), "" for an empty one.
	Snapshot string
	// Volumes are mounted into it (volumes_linux.go).
	Volumes []runtime.VolumeMount
	// Image says Template is an image's root filesystem (image_linux.go),
	// the whole lower layer, rather than a /usr/local layer over base.
	Image bool
}

// boot creates a sandbox named name (its directory and cgroup) that no
// public id points at yet: the cold path binds it at once, the warm pool
// later. The caller marks its directory as being created (creating.add)
// until the sandbox is bound or pooled, so that a sweep of this process
// never takes it for one left behind.
func (r *Runtime) boot(ctx context.Context, name string, lim runtime.Limits, host string, lay layering) (_ *sandbox, err error) {
	dir := filepath.Join(r.sandboxesDir(), name)
	// The uid range is claimed before the directory exists, so that every
	// sandbox directory has a registry record naming its creator from the
	// start: a reclaimer tells one being created from one whose creator
	// died by that record, whatever its age.
	s := slot{n: -1}
	if !r.rootless {
		end := r.phase("create: claim uid range")
		s, err = claimSlot(dir)
		end()
		if err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		s.release(dir)
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrConflict, name)
	}
	if lay.Snapshot == "" {
		err = os.Mkdir(dir, 0o700)
	} else if r.rootless || r.quota == nil {
		err = fmt.Errorf("%w: sandboxes from snapshots need the disk pool", runtime.ErrUnsupported)
	} else {
		end := r.phase("create: copy snapshot")
		err = r.fromSnapshot(dir, lay.Snapshot, s.projectID(), lim.DiskMB<<20, s.hostUID())
		end()
	}
	if err != nil {
		if _, serr := os.Lstat(dir); serr == nil && lay.Snapshot != "" {
			// Half copied: the destroy below would take it for a sandbox's.
			r.quota.Clear(s.projectID())
			removeLayer(dir)
		}
		s.release(dir)
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrConflict, name)
		}
		return nil, fmt.Errorf("create sandbox dir: %w", err)
	}
	p := persisted{Name: name, Slot: s.n, Limits: lim, Template: lay.Template, TemplateName: lay.TemplateName, Build: lay.Build, Volumes: lay.Volumes}
	sb := newSandbox(r, p, dir)
	sb.slot = s
	defer func() {
		if err != nil {
			if derr := sb.destroy(); derr != nil {
				err = fmt.Errorf("%w (and cleanup failed: %v)", err, derr)
			}
		}
	}()
	uid, gid := sandboxUID, sandboxUID
	hostUID := os.Geteuid()
	if r.rootless {
		// One mapped id only: commands run as root of their namespace, with
		// every capability dropped.
		uid, gid = -1, -1
	} else {
		hostUID = s.hostUID()
		if r.quota != nil && lay.Snapshot == "" {
			end := r.phase("create: disk limit")
			err := r.quota.Limit(dir, s.projectID(), lim.DiskMB<<20)
			end()
			if err != nil {
				return nil, fmt.Errorf("set disk limit: %w", err)
			}
		}
	}
	end := r.phase("create: writable layer")
	err = r.layout(dir, host, hostUID, lay.Snapshot != "")
	if err == nil {
		err = r.layoutLayers(dir, lay, hostUID)
	}
	end()
	if err != nil {
		return nil, err
	}
	cfg := &sbinit.Config{
		ID: name, Hostname: host, Lower: r.tmpl.rootfs, Binds: r.tmpl.binds, BindFrom: r.tmpl.bindFrom,
		Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work"), Rootfs: filepath.Join(dir, "rootfs"),
		TmpMB: lim.TmpMB, Env: mergeEnv(defaultEnv, nil), Workdir: defaultWorkdir,
		UID: uid, GID: gid, Rootless: r.rootless, Trace: r.cfg.Trace != nil, Build: lay.Build,
	}
	switch {
	case lay.Image:
		// The image's own tree, /usr included: nothing of the host's.
		cfg.Lower, cfg.Binds, cfg.BindFrom = filepath.Join(r.templatesDir(), lay.Template, imageRootfs), nil, ""
	case lay.Template != "":
		cfg.Layer = filepath.Join(r.templatesDir(), lay.Template, "layer")
	}
	var vols []volumeSource
	if len(lay.Volumes) > 0 {
		// Saved first: from here on, the volumes count as this sandbox's
		// for every other create and delete.
		if err := sb.save(); err != nil {
			return nil, err
		}
		if cfg.Volumes, vols, err = r.mountVolumes(name, lay.Volumes); err != nil {
			return nil, err
		}
		for _, v := range lay.Volumes {
			// Made in the writable layer, as the sandbox's root: in the
			// template's own directories (/mnt) its root may not write.
			fd, err := sbinit.OpenBeneath(cfg.Upper, v.Path, hostUID)
			if err != nil {
				return nil, fmt.Errorf("volume mount point %s: %w", v.Path, err)
			}
			unix.Close(fd)
		}
	}
	if err := r.start(ctx, sb, cfg, hostUID, lay.Idle, vols); err != nil {
		return nil, err
	}
	return sb, sb.save()
}

// cgroupName names a sandbox's cgroup after its uid range first, so that
// no two live sandboxes on the host, whatever their data dirs, ever share
// a group; the sandbox's own name follows for people reading the tree.
func cgroupName(slot int, name string) string {
	if slot < 0 {
		return name
	}
	n := strconv.Itoa(slot) + "-" + name
	return n[:min(len(n), 64)]
}

// layoutLayers adds a template's mount point and a build's writable
// /usr/local to a sandbox's directory.
func (r *Runtime) layoutLayers(dir string, lay layering, hostUID int) error {
	if lay.Template != "" && !lay.Image {
		if err := os.Mkdir(filepath.Join(dir, "layer"), 0o755); err != nil {
			return err
		}
	}
	if !lay.Build {
		return nil
	}
	var lowers []string
	if lay.Template != "" {
		lowers = append(lowers, filepath.Join(r.templatesDir(), lay.Template, layerUsrLocal))
	}
	lowers = append(lowers, usrLocal)
	if err := buildSkeleton(filepath.Join(dir, buildUpper), lowers, hostUID+sandboxUID); err != nil {
		return fmt.Errorf("build layer: %w", err)
	}
	work := filepath.Join(dir, buildWork)
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	return os.Lchown(work, hostUID, hostUID)
}

// bind gives a booted sandbox its public id, limits, environment and
// working directory. The id is claimed with an exclusive symlink, so two
// creates of one id cannot both succeed.
func (r *Runtime) bind(ctx context.Context, sb *sandbox, spec runtime.Spec, lim runtime.Limits) error {
	defer r.phase("create: bind id")()
	link := filepath.Join(r.idsDir(), spec.ID)
	if err := os.Symlink(sb.p.Name, link); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: sandbox %s", runtime.ErrConflict, spec.ID)
		}
		return fmt.Errorf("register sandbox id: %w", err)
	}
	if sb.cg != nil && lim != sb.p.Limits {
		if err := sb.cg.SetLimits(lim); err != nil {
			os.Remove(link)
			return fmt.Errorf("set limits: %w", err)
		}
	}
	// A pooled sandbox's disk limit changes in place, except in image mode
	// (the pool then only hands out sandboxes of the default size).
	if r.quota != nil && sb.p.Slot >= 0 && lim.DiskMB != sb.p.Limits.DiskMB {
		if err := r.quota.Limit(sb.dir, sb.slot.projectID(), lim.DiskMB<<20); err != nil {
			os.Remove(link)
			return fmt.Errorf("set disk limit: %w", err)
		}
	}
	sb.p.ID, sb.p.Limits, sb.p.Env, sb.p.Workdir = spec.ID, lim, spec.Env, spec.Workdir
	if sb.p.Workdir != "" && sb.p.Workdir != defaultWorkdir {
		// Best effort, as the sandbox user: a workdir it may not create
		// makes each exec fail with a clear chdir error instead.
		sb.client.MkdirAll(ctx, sb.p.Workdir, 0o755)
	}
	if err := sb.save(); err != nil {
		os.Remove(link)
		return err
	}
	r.mu.Lock()
	r.live[spec.ID] = sb
	r.mu.Unlock()
	return nil
}

const defaultWorkdir = "/home/user"

// defaultHostname is every sandbox's hostname unless the spec names one: a
// pooled sandbox is booted before its id is known.
const defaultHostname = "sandbox"

// layout creates the writable layer: upper and work dirs owned by the
// sandbox's root, the workspace owned by its user, per-sandbox /etc files.
func (r *Runtime) layout(dir string, h string, hostUID int, fromSnapshot bool) error {
	own := func(p string, id int) error {
		if r.rootless {
			return nil
		}
		return os.Lchown(p, hostUID+id, hostUID+id)
	}
	for _, d := range []string{"upper", "work", "rootfs", "lower", "upper/home", "upper/etc", "upper/home/user"} {
		p := filepath.Join(dir, d)
		if fromSnapshot && strings.HasPrefix(d, "upper") {
			// The snapshot's, as it was (a deleted /etc is a whiteout).
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		id := 0
		if d == "upper/home/user" {
			id = sandboxUID
		}
		if err := own(p, id); err != nil {
			return fmt.Errorf("chown %s: %w", d, err)
		}
	}
	// The sandbox dir itself must be traversable by the sandbox's root so
	// the overlay can reach upper and work inside the user namespace.
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	files := map[string]string{
		"etc/hostname": h + "\n",
		"etc/hosts":    fmt.Sprintf("127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", h),
	}
	if fromSnapshot {
		etc := filepath.Join(dir, "upper", "etc")
		if err := os.MkdirAll(etc, 0o755); err != nil {
			return err
		}
		if err := own(etc, 0); err != nil {
			return err
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, "upper", name)
		if fromSnapshot {
			// Whatever the snapshot had there (a whiteout, a symlink out
			// of the sandbox) is replaced, never written through.
			os.Remove(p)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
		if err := own(p, 0); err != nil {
			return err
		}
	}
	return nil
}

// start re-executes the binary as the sandbox init, places it in its
// cgroup, hands it its configuration and waits for its agent to answer.
func (r *Runtime) start(ctx context.Context, sb *sandbox, cfg *sbinit.Config, hostUID int, idle bool, vols []volumeSource) error {
	endPrep := r.phase("create: sockets and pipes")
	sock := filepath.Join(sb.dir, "agent.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	// Whoever can connect can run anything in the sandbox: the daemon only.
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("agent socket: %w", err)
	}
	lnFile, err := ln.File()
	ln.Close()
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	defer lnFile.Close()
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer cfgR.Close()
	defer cfgW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer stR.Close()
	defer stW.Close()
	logf, err := os.OpenFile(filepath.Join(sb.dir, "init.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()

	endPrep()
	if r.cgErr == nil && !r.rootless {
		end := r.phase("create: cgroup")
		name := cgroupName(sb.slot.n, cfg.ID)
		cg, err := cgroups.New(name, sb.p.Limits)
		if err == nil && idle {
			if err = cg.SetIdle(true); err != nil {
				cg.Destroy()
			}
		}
		end()
		if err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
		sb.cg, sb.p.Cgroup, sb.p.CgroupName = cg, true, name
	}
	cmd := exec.Command(initExec, sbinit.Arg, cfg.ID)
	// One P: the agent mostly waits on sockets and pipes, and fewer threads
	// make every all-threads syscall of the init (and its exit) cheaper.
	cmd.Env = []string{"GOMAXPROCS=1"}
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{cfgR, stW, lnFile, r.bin}
	if sb.slot.f != nil {
		// The init holds its uid range's lock for as long as it lives.
		cmd.ExtraFiles = append(cmd.ExtraFiles, sb.slot.f)
	}
	var volSock *os.File
	if len(vols) > 0 {
		ours, theirs, err := socketPair()
		if err != nil {
			return fmt.Errorf("volume socket: %w", err)
		}
		defer ours.Close()
		defer theirs.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
		cfg.VolumeSock, volSock = 2+len(cmd.ExtraFiles), ours
	}
	// The init moves the thread it forks commands from into the group's
	// commands subgroup through this file, opened here: its own
	// credentials could not. Without a subgroup it keeps the threads its
	// group's pids limit holds for it started instead.
	var tasks string
	if sb.cg != nil {
		tasks = sb.cg.CommandTasks()
	}
	if tasks == "" {
		cfg.ReserveThreads = cgroups.InitPids
	} else {
		f, err := os.OpenFile(tasks, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("commands cgroup: %w", err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		cfg.CommandTasks = 2 + len(cmd.ExtraFiles)
	}
	ids := 1
	if !r.rootless {
		ids = uidCount
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostUID, Size: ids}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostUID, Size: ids}},
		GidMappingsEnableSetgroups: !r.rootless,
		// Without uid 0 inside the init has no capabilities in its own
		// namespace and every mount fails with EPERM.
		Credential: &syscall.Credential{Uid: 0, Gid: 0},
	}
	if r.cfg.DieWithCaller {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	// The config fits the pipe's buffer: the init reads it as soon as it
	// starts, and builds its root while we place it in its cgroup.
	if cfg.Trace {
		cfg.SentAt = time.Now().UnixNano()
	}
	if err := json.NewEncoder(cfgW).Encode(cfg); err != nil {
		return fmt.Errorf("send init config: %w", err)
	}
	end := r.phase("create: clone init (waits included)")
	proc, err := r.startInit(cmd, hostUID, idle)
	end()
	if err != nil {
		return fmt.Errorf("start sandbox init: %w", err)
	}
	sb.p.Pid = proc.Pid
	sb.p.Start = procStart(sb.p.Pid)
	sb.proc = proc
	if err := sb.slot.recordInit(sb.dir, sb.p.Pid, sb.p.Start); err != nil {
		return err
	}
	if volSock != nil {
		end := r.phase("create: volume mounts")
		err := sendVolumeMounts(volSock, sb.p.Pid, vols)
		end()
		if err != nil {
			return err
		}
	}
	cfgR.Close()
	stW.Close()
	if sb.cg != nil {
		endAdd := r.phase("create: place in cgroup")
		err = sb.cg.Add(sb.p.Pid)
		endAdd()
		if err != nil {
			return fmt.Errorf("place init in cgroup: %w", err)
		}
	}
	cfgW.Close() // tells the init it is placed
	defer r.phase("create: init setup until agent ready")()
	return waitReady(ctx, stR, filepath.Join(sb.dir, "init.log"), r.cfg.Trace)
}

// initExec is the path the init is executed from: the binary, opened by the
// runtime in the host's mount namespace and passed as sbinit.FDBinary. Executed by
// its path, the init's executable would be a file of its own namespace's
// copy of the host's mounts, which pins that copy's root, and, since the
// mounts copied into a less privileged user namespace are locked to their
// parents, every mount the host had when the sandbox was cloned: another
// data dir's disk pool, a test's btrfs image, a USB stick, all kept alive
// (their loop devices attached, their unmounts never completing) for as
// long as the sandbox ran. Through /proc/self/fd the executable is the
// host's file and the detached copy goes at pivot_root.
const initExec = "/proc/self/fd/6"

// startInit starts the init through the spawner (see spawner_linux.go),
// except for a caller that wants its sandboxes to die with it: the
// parent-death signal is the forking thread's, and the spawner's thread is
// not the caller's.
// The init's user namespace is owned by hostUID (see owner_linux.go).
func (r *Runtime) startInit(cmd *exec.Cmd, hostUID int, idle bool) (*os.Process, error) {
	owner := hostUID
	if r.rootless {
		owner = -1
	}
	if r.cfg.DieWithCaller {
		if err := sbinit.AsOwner(owner, cmd.Start); err != nil {
			return nil, err
		}
		return cmd.Process, nil
	}
	return r.spawner.spawn(cmd, owner, idle)
}

// waitReady reads the init's one-line status; the init closes the pipe (and
// the read fails) if it dies first.
func waitReady(ctx context.Context, status *os.File, logPath string, trace func(string, time.Duration)) error {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		br := bufio.NewReader(status)
		for {
			line, err := br.ReadString('\n')
			// "trace init: <phase> <µs>" lines come first when tracing.
			if rest, ok := strings.CutPrefix(line, "trace "); ok && err == nil {
				i := strings.LastIndexByte(rest, ' ')
				if us, perr := strconv.ParseInt(strings.TrimSpace(rest[i+1:]), 10, 64); perr == nil && i > 0 && trace != nil {
					trace(rest[:i], time.Duration(us)*time.Microsecond)
				}
				continue
			}
			ch <- result{line, err}
			return
		}
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case res := <-ch:
		line := strings.TrimSpace(res.line)
		if line == "ok" {
			return nil
		}
		if line == "" {
			b, _ := os.ReadFile(logPath)
			line = "init exited: " + strings.TrimSpace(string(b))
		}
		return fmt.Errorf("%w: sandbox init: %s", runtime.ErrUnavailable, strings.TrimPrefix(line, "error: "))
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("%w: sandbox init did not become ready", runtime.ErrUnavailable)
	}
}

// mergeEnv returns KEY=VALUE pairs of base overridden by over, sorted so a
// sandbox's environment is deterministic.
func mergeEnv(base, over map[string]string) []string {
	m := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
