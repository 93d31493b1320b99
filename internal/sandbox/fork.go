package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// MaxForks bounds the sandboxes one fork makes.
const MaxForks = 50

// ForkRequest is POST /v1/sandboxes/{id}/fork: Count new sandboxes whose
// filesystem is the parent's at this instant. Processes and memory are
// not copied: each fork starts fresh on the parent's files. The other
// fields override what the forks take from the parent (limits, workdir,
// network, secrets, idle settings; env and metadata are merged over the
// parent's); timeout_s is the forks' own (default as for a create).
type ForkRequest struct {
	Count int `json:"count"`
	CreateRequest
}

// Fork makes req.Count sandboxes from a snapshot of parent id's writable
// layer taken now, on the parent's node; all are made or none.
func (s *Service) Fork(ctx context.Context, c Caller, id string, req ForkRequest) ([]sandboxrec.Sandbox, error) {
	if req.Count < 1 || req.Count > MaxForks {
		return nil, fmt.Errorf("%w: count %d must be between 1 and %d", ErrInvalid, req.Count, MaxForks)
	}
	if req.Template != "" || req.Snapshot != "" || req.Build {
		return nil, fmt.Errorf("%w: a fork has its parent's template and files: template, snapshot and build cannot be set", ErrInvalid)
	}
	if c.SandboxID != "" {
		return nil, fmt.Errorf("%w: a sandbox token cannot create sandboxes", ErrInvalid)
	}
	parent, rtName, err := s.forkSnapshot(ctx, c, id)
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	defer s.dropSnapshot(ctx, nodeOr(parent.Node), rtName)
	child, err := forkRequest(parent, req.CreateRequest)
	if err != nil {
		return nil, err
	}
	from := origin{snapshot: rtName, node: nodeOr(parent.Node), forkOf: parent.ID}
	start := time.Now()
	out := make([]sandboxrec.Sandbox, req.Count)
	errs := make([]error, req.Count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // the creates share the node's CPUs
	for i := range out {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, span := s.span(ctx, "sandbox.create", c, "")
			out[i], errs[i] = s.create(ctx, c, child, from)
			endSpan(span, errs[i], attribute.String("airlock.sandbox_id", out[i].ID), attribute.String("airlock.fork_of", parent.ID))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for i, sb := range out {
			if errs[i] == nil {
				if derr := s.Delete(ctx, c, sb.ID); derr != nil {
					s.log.Error("fork: delete a fork after another failed", "sandbox", sb.ID, "err", derr)
				}
			}
		}
		return nil, fmt.Errorf("fork sandbox %s: %w", id, errs[firstErr(errs)])
	}
	ids := make([]string, len(out))
	for i, sb := range out {
		ids[i] = sb.ID
	}
	s.auditor(c, parent.ID, parent.TenantID).record(audit.SandboxForked, map[string]any{
		"sandboxes": ids, "duration_ms": time.Since(start).Milliseconds()})
	return out, nil
}

func firstErr(errs []error) int {
	for i, err := range errs {
		if err != nil {
			return i
		}
	}
	return 0
}

// forkSnapshot snapshots the parent under its lock.
func (s *Service) forkSnapshot(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, string, error) {
	unlock := s.locks.lock(id)
	defer unlock()
	parent, err := s.resolve(ctx, c, id)
	if err != nil {
		return sandboxrec.Sandbox{}, "", err
	}
	if !alive(parent.State) {
		return sandboxrec.Sandbox{}, "", notRunning(parent)
	}
	rtName, _, err := s.takeSnapshot(context.WithoutCancel(ctx), parent, "f-")
	return parent, rtName, err
}

// forkRequest is the create request of a fork of parent with overrides o.
func forkRequest(parent sandboxrec.Sandbox, o CreateRequest) (CreateRequest, error) {
	r := o
	r.Template = parent.Template
	pick := func(v *int64, p int64) {
		if *v == 0 {
			*v = p
		}
	}
	if r.CPUs == 0 {
		r.CPUs = parent.CPUs
	}
	pick(&r.MemoryMB, parent.MemoryMB)
	pick(&r.Pids, parent.Pids)
	pick(&r.DiskMB, parent.DiskMB)
	pick(&r.IdleTimeoutS, parent.IdleTimeoutS)
	if r.Workdir == "" {
		r.Workdir = parent.Workdir
	}
	r.Env = merged(parent.Env, o.Env)
	r.Metadata = merged(parent.Metadata, o.Metadata)
	pl := lifecycleOf(parent)
	if !r.AutoResume {
		r.AutoResume = pl.AutoResume
	}
	if r.IdleAction == "" {
		r.IdleAction = pl.IdleAction
	}
	pick(&r.MaxPausedS, pl.MaxPausedS)
	if r.Network == nil && parent.Network != "" {
		var p egress.Policy
		if err := json.Unmarshal([]byte(parent.Network), &p); err != nil {
			return CreateRequest{}, fmt.Errorf("sandbox %s: decode network policy: %w", parent.ID, err)
		}
		r.Network = &p
	}
	if r.Secrets == nil && parent.Secrets != "" {
		var b boundSecrets
		if err := json.Unmarshal([]byte(parent.Secrets), &b); err != nil {
			return CreateRequest{}, fmt.Errorf("sandbox %s: decode secrets: %w", parent.ID, err)
		}
		for name := range maps.Keys(b.Placeholders) {
			r.Secrets = append(r.Secrets, name)
		}
	}
	return r, nil
}

func merged(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}
