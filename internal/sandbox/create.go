package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// create validates the request, checks the tenant's quota and inserts the
// record atomically, then boots the sandbox. An unknown template is
// ErrNotFound (like any other missing resource); a sandbox token cannot
// create sandboxes (ErrInvalid), since it exists to reach one sandbox only.
func (s *Service) create(ctx context.Context, c Caller, req CreateRequest, from origin) (sandboxrec.Sandbox, error) {
	if err := s.resolveSnapshot(ctx, c, &req, &from); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	mounts, node, err := s.resolveVolumes(ctx, c, req)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if from.node != "" {
		if node != "" && node != from.node {
			return sandboxrec.Sandbox{}, fmt.Errorf("%w: the snapshot is on node %s, a volume on node %s: one sandbox cannot have both", ErrInvalid, from.node, node)
		}
		node = from.node
	}
	rec, err := s.newRecord(ctx, c, req, from)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	// Held until the sandbox is running or failed, so a delete or timeout
	// change that races with create waits for a settled record.
	unlock := s.locks.lock(rec.ID)
	defer unlock()
	if err := s.admit(ctx, rec); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	s.audit.fresh(rec.ID, rec.TenantID)
	s.meterStart(rec)
	// The record exists now: however the caller's request ends, it must
	// not be left in creating.
	ctx = context.WithoutCancel(ctx)
	spec := runtime.Spec{
		ID: rec.ID, Template: rec.Template, Env: rec.Env, Workdir: rec.Workdir, Build: req.Build,
		Limits:   runtime.Limits{CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, Pids: rec.Pids, DiskMB: rec.DiskMB},
		Snapshot: from.snapshot, Node: node, Volumes: mounts,
	}
	sb, err := s.rt.Create(ctx, spec)
	if err != nil && errors.Is(err, runtime.ErrNoRoom) {
		// The node holding its snapshot or volumes has no room.
		l := lifecycleOf(rec)
		if from.snapshot != "" {
			sb, l.Transfer, err = s.createElsewhere(ctx, spec, from, rec.Template)
		} else if len(req.Volumes) > 0 {
			sb, l.VolumeTransfers, err = s.createMovingVolumes(ctx, c, spec, req.Volumes, node)
		}
		rec.Lifecycle = l.encode()
	}
	if err != nil {
		return sandboxrec.Sandbox{}, s.createFailed(ctx, c, rec, err)
	}
	if err := s.reattachNetwork(ctx, rec, sb); err != nil {
		s.meterStats(ctx, rec.ID, sb)
		if derr := sb.Destroy(ctx); derr != nil {
			s.log.Error("destroy sandbox after failed create", "sandbox", rec.ID, "err", derr)
		}
		return sandboxrec.Sandbox{}, s.createFailed(ctx, c, rec, err)
	}
	if err := s.startTemplate(ctx, c, rec, sb, req.Build); err != nil {
		s.work.Drop(rec.ID)
		s.detach(rec.ID)
		s.meterStats(ctx, rec.ID, sb)
		if derr := sb.Destroy(ctx); derr != nil {
			s.log.Error("destroy sandbox after failed create", "sandbox", rec.ID, "err", derr)
		}
		return sandboxrec.Sandbox{}, s.createFailed(ctx, c, rec, err)
	}
	rec.State, rec.Node = sandboxrec.Running, runtime.NodeOf(s.rt, rec.ID)
	s.idle.watch(rec.ID, time.Duration(rec.IdleTimeoutS)*time.Second, s.now())
	// Deferred: after a crash, reconcile finds the runtime's sandbox and
	// marks a record left creating running.
	if err := s.st.UpdateSandboxSoon(ctx, rec); err != nil {
		s.detach(rec.ID)
		s.meterStats(ctx, rec.ID, sb)
		if derr := sb.Destroy(ctx); derr != nil {
			s.log.Error("destroy sandbox after failed create", "sandbox", rec.ID, "err", derr)
		}
		return sandboxrec.Sandbox{}, s.createFailed(ctx, c, rec, fmt.Errorf("save sandbox: %w", err))
	}
	s.wakeReaper(rec.ExpiresAt)
	s.recordCreated(c, rec)
	s.meterCreated(rec.ID)
	return rec, nil
}

// createFailed records why a create failed and maps the runtime's error.
func (s *Service) createFailed(ctx context.Context, c Caller, rec sandboxrec.Sandbox, cause error) error {
	rec.State, rec.Reason, rec.EndedAt = sandboxrec.Failed, "create: "+cause.Error(), s.now()
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		s.log.Error("mark sandbox failed", "sandbox", rec.ID, "err", err)
	}
	s.meterCreateFailed(ctx, rec, cause)
	s.auditor(c, rec.ID, rec.TenantID).record(audit.SandboxFailed, map[string]any{"reason": rec.Reason})
	s.audit.forget(rec.ID)
	switch {
	case errors.Is(cause, runtime.ErrInvalid):
		return fmt.Errorf("%w: create sandbox: %v", ErrInvalid, cause)
	case errors.Is(cause, runtime.ErrNotFound):
		return fmt.Errorf("%w: create sandbox: %v", ErrNotFound, cause)
	case errors.Is(cause, runtime.ErrConflict):
		return fmt.Errorf("%w: create sandbox: %v", ErrConflict, cause)
	}
	return fmt.Errorf("%w: create sandbox %s: %v", ErrUnavailable, rec.ID, cause)
}

// Check refuses, as Create would, a request that asks for what can never
// be had: invalid fields, an unknown template or secret, limits past the
// host's capacity or past a tenant quota even with no other sandbox. It
// creates nothing; quota taken by other sandboxes is not checked (that
// may pass).
func (s *Service) Check(ctx context.Context, c Caller, req CreateRequest) error {
	var from origin
	if err := s.resolveSnapshot(ctx, c, &req, &from); err != nil {
		return err
	}
	if _, _, err := s.resolveVolumes(ctx, c, req); err != nil {
		return err
	}
	rec, err := s.newRecord(ctx, c, req, from)
	if err != nil {
		return err
	}
	t, err := s.tenants.get(ctx, s.st, rec.TenantID, s.now())
	if err != nil {
		return fmt.Errorf("load tenant %s: %w", rec.TenantID, err)
	}
	if t.MaxMemoryMB > 0 && rec.MemoryMB > t.MaxMemoryMB {
		return fmt.Errorf("%w: %d MiB memory requested, tenant %s may use %d MiB in all", ErrLimitExceeded, rec.MemoryMB, t.Name, t.MaxMemoryMB)
	}
	if err := s.checkStorage(t); err != nil {
		return err
	}
	return s.disk.check(s.now())
}

// admit checks the tenant's quota and inserts the record as creating, under
// the tenant's lock: the record counts in Usage from then on, so the next
// create sees it.
func (s *Service) admit(ctx context.Context, rec sandboxrec.Sandbox) error {
	unlock := s.locks.lock("tenant/" + rec.TenantID)
	defer unlock()
	t, err := s.tenants.get(ctx, s.st, rec.TenantID, s.now())
	if err != nil {
		return fmt.Errorf("load tenant %s: %w", rec.TenantID, err)
	}
	if err := s.disk.check(s.now()); err != nil {
		return err
	}
	if err := s.checkStorage(t); err != nil {
		return err
	}
	// A tenant without quotas has nothing to count: skip the query.
	if t.MaxSandboxes > 0 || t.MaxMemoryMB > 0 {
		n, mem, err := s.st.Usage(ctx, rec.TenantID)
		if err != nil {
			return fmt.Errorf("tenant %s usage: %w", rec.TenantID, err)
		}
		if t.MaxSandboxes > 0 && n+1 > t.MaxSandboxes {
			return quotaError(fmt.Sprintf("tenant %s already has %d of %d sandboxes", t.Name, n, t.MaxSandboxes))
		}
		if t.MaxMemoryMB > 0 && mem+rec.MemoryMB > t.MaxMemoryMB {
			return quotaError(fmt.Sprintf("tenant %s uses %d MiB of %d MiB memory, %d MiB more requested",
				t.Name, mem, t.MaxMemoryMB, rec.MemoryMB))
		}
	}
	if err := s.st.CreateSandbox(ctx, rec); err != nil {
		return fmt.Errorf("save sandbox: %w", err)
	}
	return nil
}

// newRecord validates req (a sandbox token may not create) and builds the
// record with every default filled in, so what the API shows is what the
// sandbox gets.
func (s *Service) newRecord(ctx context.Context, c Caller, req CreateRequest, from origin) (sandboxrec.Sandbox, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: a sandbox token cannot create sandboxes", ErrInvalid)
	}
	if !printable(req.Template) {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: template %s: a template name is printable, without control characters", ErrInvalid, clip(req.Template))
	}
	if req.Template != "" && !s.HasTemplate(ctx, req.Template) {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: template %q", ErrNotFound, req.Template)
	}
	lim, err := s.limits(req)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	timeout, err := createTimeout(req.TimeoutS)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if req.IdleTimeoutS < 0 || req.IdleTimeoutS > int64(MaxTimeout/time.Second) {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: idle_timeout_s %d must be between 0 (none) and %d", ErrInvalid, req.IdleTimeoutS, int64(MaxTimeout/time.Second))
	}
	if err := ValidEnv(req.Env); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if err := validMetadata(req.Metadata); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if err := validWorkdir(req.Workdir); err != nil {
		return sandboxrec.Sandbox{}, err
	}
	life, err := newLifecycle(req, from)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if b := req.Budget; b != nil && b.MaxCostUSD != nil && s.opts.Prices == nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: budget.max_cost_usd: this server has no price table (airlock serve --prices FILE); use budget.max_tokens", ErrInvalid)
	}
	id, err := newID()
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	pol, bound := req.Network, ""
	if len(req.Secrets) > 0 {
		// Checked first: the policy's own errors then cover the secrets'
		// hosts too.
		if _, _, err := s.compileNetwork(pol); err != nil {
			return sandboxrec.Sandbox{}, err
		}
		if bound, pol, err = s.bindSecrets(ctx, c.TenantID, id, req.Secrets, pol); err != nil {
			return sandboxrec.Sandbox{}, err
		}
	}
	_, network, err := s.compileNetwork(pol)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	env := maps.Clone(req.Env)
	if req.Build && env["NPM_CONFIG_PREFIX"] == "" {
		// npm's global prefix is /usr on Debian and others: a build
		// installs where the template keeps what it adds.
		if env == nil {
			env = map[string]string{}
		}
		env["NPM_CONFIG_PREFIX"] = "/usr/local"
	}
	now := s.now()
	template := req.Template
	if template == "" {
		template = "base"
	}
	return sandboxrec.Sandbox{
		ID: id, TenantID: c.TenantID, State: sandboxrec.Creating, Template: template,
		CPUs: lim.CPUs, MemoryMB: lim.MemoryMB, Pids: lim.Pids, DiskMB: lim.DiskMB,
		Env: env, Metadata: maps.Clone(req.Metadata), Workdir: req.Workdir,
		CreatedAt: now, ExpiresAt: now.Add(timeout), Network: network, Secrets: bound,
		IdleTimeoutS: req.IdleTimeoutS, Lifecycle: life.encode(),
	}, nil
}

// newLifecycle checks req's pause settings and notes where the sandbox
// comes from.
func newLifecycle(req CreateRequest, from origin) (lifecycle, error) {
	switch req.IdleAction {
	case "", IdleDestroy, IdlePause:
	default:
		return lifecycle{}, fmt.Errorf("%w: idle_action %s: want %q or %q", ErrInvalid, clip(req.IdleAction), IdleDestroy, IdlePause)
	}
	if req.IdleAction == IdlePause && req.IdleTimeoutS == 0 {
		return lifecycle{}, fmt.Errorf("%w: idle_action \"pause\" needs an idle_timeout_s", ErrInvalid)
	}
	if maxS := int64(MaxMaxPaused / time.Second); req.MaxPausedS < 0 || req.MaxPausedS > maxS {
		return lifecycle{}, fmt.Errorf("%w: max_paused_s %d must be between 0 (the default, %d) and %d", ErrInvalid,
			req.MaxPausedS, int64(DefaultMaxPaused/time.Second), maxS)
	}
	if err := req.Budget.Validate(); err != nil {
		return lifecycle{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return lifecycle{AutoResume: req.AutoResume, IdleAction: req.IdleAction, MaxPausedS: req.MaxPausedS,
		Snapshot: req.Snapshot, ForkOf: from.forkOf, Volumes: req.Volumes, Budget: req.Budget}, nil
}

// limits applies defaults and refuses what the runtime could not honour
// (ErrInvalid) or this host could never hold (ErrLimitExceeded).
func (s *Service) limits(req CreateRequest) (runtime.Limits, error) {
	// 0 asks for the default; anything else, negative too, must be in
	// the runtime's range, which the message names.
	lim := runtime.Limits{CPUs: req.CPUs, MemoryMB: req.MemoryMB, Pids: req.Pids, DiskMB: req.DiskMB}.WithDefaults()
	if err := lim.Validate(); err != nil {
		return runtime.Limits{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cpus, mem, host := s.opts.HostCPUs, s.opts.HostMemoryMB, "the host has"
	if s.opts.Largest != nil {
		var ok bool
		if cpus, mem, ok = s.opts.Largest(); !ok {
			return lim, nil
		}
		host = "the largest node has"
	}
	if cpus > 0 && lim.CPUs > float64(cpus) {
		return runtime.Limits{}, fmt.Errorf("%w: %g cpus requested, %s %d", ErrLimitExceeded, lim.CPUs, host, cpus)
	}
	if mem > 0 && lim.MemoryMB > mem {
		return runtime.Limits{}, fmt.Errorf("%w: %d MiB memory requested, %s %d MiB", ErrLimitExceeded, lim.MemoryMB, host, mem)
	}
	return lim, nil
}

func createTimeout(secs int64) (time.Duration, error) {
	switch {
	case secs == 0:
		return DefaultTimeout, nil
	case secs < 0 || secs > int64(MaxTimeout/time.Second):
		return 0, fmt.Errorf("%w: timeout_s %d must be between 1 and %d", ErrInvalid, secs, int64(MaxTimeout/time.Second))
	}
	return time.Duration(secs) * time.Second, nil
}

// validWorkdir accepts "" (the default) or an absolute path the kernel
// can take.
func validWorkdir(w string) error {
	switch {
	case w == "":
		return nil
	case strings.IndexByte(w, 0) >= 0:
		return fmt.Errorf("%w: workdir: NUL byte in path", ErrInvalid)
	case !path.IsAbs(w):
		return fmt.Errorf("%w: workdir %s must be an absolute path", ErrInvalid, clip(w))
	}
	if err := CheckPathLength(path.Clean(w)); err != nil {
		return fmt.Errorf("workdir: %w", err)
	}
	return nil
}
