package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// A snapshot is a sandbox's writable layer (its workspace and everything
// written outside it) at one instant, kept on the node that took it and
// counted in the tenant's storage quota until deleted. Processes and
// memory are not in it: a sandbox made from it starts fresh on those
// files.

// Snapshot is a tenant's snapshot, as the API shows it.
type Snapshot struct {
	Name      string    `json:"name"`
	Sandbox   string    `json:"sandbox"`
	Template  string    `json:"template"`
	Node      string    `json:"node"`
	SizeBytes int64     `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// snapshotSpec is sandboxrec.Disk.Spec of a snapshot.
type snapshotSpec struct {
	Runtime  string `json:"runtime"` // the runtime's name of it
	Template string `json:"template"`
}

func snapshotOf(d sandboxrec.Disk) (Snapshot, snapshotSpec) {
	var sp snapshotSpec
	json.Unmarshal([]byte(d.Spec), &sp) // written by this package
	return Snapshot{Name: d.Name, Sandbox: d.Sandbox, Template: sp.Template, Node: d.Node,
		SizeBytes: d.Bytes, CreatedAt: d.CreatedAt.UTC()}, sp
}

// validDiskName: 1-63 of [a-zA-Z0-9._-], starting with a letter or digit.
func validDiskName(kind, name string) error {
	ok := len(name) > 0 && len(name) <= 63
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("%w: %s name %s: want 1-63 of letters, digits, '.', '_' and '-', starting with a letter or digit", ErrInvalid, kind, clip(name))
	}
	return nil
}

// runtimeName is a fresh name for something the runtime keeps for a
// tenant: unguessable, and unique whatever the tenant names it.
func runtimeName(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// on is the runtime of the named node ("" or "local": this host's).
func (s *Service) on(ctx context.Context, node string) (runtime.Runtime, error) {
	if r, ok := s.rt.(runtime.NodeRouter); ok {
		rt, err := r.On(ctx, node)
		if err != nil {
			return nil, fmt.Errorf("%w: node %s: %v", ErrUnavailable, node, err)
		}
		return rt, nil
	}
	return s.rt, nil
}

func (s *Service) snapshotter(ctx context.Context, node string) (runtime.Snapshotter, error) {
	rt, err := s.on(ctx, node)
	if err != nil {
		return nil, err
	}
	sn, ok := rt.(runtime.Snapshotter)
	if !ok {
		return nil, fmt.Errorf("%w: node %s cannot keep snapshots", ErrUnavailable, node)
	}
	return sn, nil
}

// CreateSnapshot saves sandbox id's writable layer as the tenant's
// snapshot name ("" picks one). The sandbox is frozen for the instant it
// takes, and runs on after (a paused one stays paused).
func (s *Service) CreateSnapshot(ctx context.Context, c Caller, id, name string) (Snapshot, error) {
	if name == "" {
		n, err := runtimeName("snap-")
		if err != nil {
			return Snapshot{}, err
		}
		name = n
	}
	if err := validDiskName("snapshot", name); err != nil {
		return Snapshot{}, err
	}
	unlock := s.locks.lock(id)
	defer unlock()
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return Snapshot{}, err
	}
	if !alive(rec.State) {
		return Snapshot{}, notRunning(rec)
	}
	if _, err := s.st.GetDisk(ctx, sandboxrec.DiskSnapshot, rec.TenantID, name); err == nil {
		return Snapshot{}, fmt.Errorf("%w: snapshot %s exists", ErrConflict, name)
	}
	if err := s.checkTenantStorage(ctx, rec.TenantID); err != nil {
		return Snapshot{}, err
	}
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	rtName, size, err := s.takeSnapshot(ctx, rec, "s-")
	if err != nil {
		return Snapshot{}, err
	}
	spec, _ := json.Marshal(snapshotSpec{Runtime: rtName, Template: rec.Template})
	d := sandboxrec.Disk{Kind: sandboxrec.DiskSnapshot, TenantID: rec.TenantID, Name: name, Node: nodeOr(rec.Node),
		Sandbox: id, Bytes: size, CreatedAt: s.now(), Spec: string(spec)}
	if err := s.st.CreateDisk(ctx, d); err != nil {
		s.dropSnapshot(ctx, d.Node, rtName)
		if errors.Is(err, store.ErrConflict) {
			return Snapshot{}, fmt.Errorf("%w: snapshot %s exists", ErrConflict, name)
		}
		return Snapshot{}, fmt.Errorf("save snapshot %s: %w", name, err)
	}
	s.auditor(c, id, rec.TenantID).record(audit.SnapshotCreated, map[string]any{
		"name": name, "size_bytes": size, "duration_ms": time.Since(start).Milliseconds()})
	snap, _ := snapshotOf(d)
	return snap, nil
}

// takeSnapshot has rec's node snapshot it under a fresh runtime name.
func (s *Service) takeSnapshot(ctx context.Context, rec sandboxrec.Sandbox, prefix string) (string, int64, error) {
	sn, err := s.snapshotter(ctx, rec.Node)
	if err != nil {
		return "", 0, err
	}
	rtName, err := runtimeName(prefix)
	if err != nil {
		return "", 0, err
	}
	size, err := sn.Snapshot(ctx, rec.ID, rtName)
	if err != nil {
		return "", 0, s.runtimeError(ctx, rec.ID, "snapshot", err)
	}
	return rtName, size, nil
}

// dropSnapshot deletes a runtime snapshot nothing refers to, logging
// what it cannot.
func (s *Service) dropSnapshot(ctx context.Context, node, rtName string) {
	sn, err := s.snapshotter(ctx, node)
	if err == nil {
		err = sn.DeleteSnapshot(ctx, rtName)
	}
	if err != nil {
		s.log.Error("delete snapshot", "node", node, "snapshot", rtName, "err", err)
	}
}

func nodeOr(node string) string {
	if node == "" {
		return runtime.LocalNode
	}
	return node
}

// checkTenantStorage refuses more disk for a tenant at its storage quota.
func (s *Service) checkTenantStorage(ctx context.Context, tenant string) error {
	t, err := s.tenants.get(ctx, s.st, tenant, s.now())
	if err != nil {
		return fmt.Errorf("load tenant %s: %w", tenant, err)
	}
	return s.checkStorage(t)
}

// Snapshots lists the caller's snapshots.
func (s *Service) Snapshots(ctx context.Context, c Caller) ([]Snapshot, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return []Snapshot{}, nil
	}
	ds, err := s.st.ListDisks(ctx, sandboxrec.DiskSnapshot, c.TenantID)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out := make([]Snapshot, 0, len(ds))
	for _, d := range ds {
		snap, _ := snapshotOf(d)
		out = append(out, snap)
	}
	return out, nil
}

// GetSnapshot returns the caller's snapshot name.
func (s *Service) GetSnapshot(ctx context.Context, c Caller, name string) (Snapshot, error) {
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskSnapshot, name)
	if err != nil {
		return Snapshot{}, err
	}
	snap, _ := snapshotOf(d)
	return snap, nil
}

// ownDisk loads one of the caller's disks; another tenant's is not found.
func (s *Service) ownDisk(ctx context.Context, c Caller, kind, name string) (sandboxrec.Disk, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return sandboxrec.Disk{}, fmt.Errorf("%w: %s %s", ErrNotFound, kind, clip(name))
	}
	d, err := s.st.GetDisk(ctx, kind, c.TenantID, name)
	if errors.Is(err, store.ErrNotFound) {
		return sandboxrec.Disk{}, fmt.Errorf("%w: %s %s", ErrNotFound, kind, clip(name))
	}
	if err != nil {
		return sandboxrec.Disk{}, fmt.Errorf("load %s %s: %w", kind, name, err)
	}
	return d, nil
}

// DeleteSnapshot deletes the caller's snapshot; sandboxes made from it
// keep their copy.
func (s *Service) DeleteSnapshot(ctx context.Context, c Caller, name string) error {
	unlock := s.locks.lock("snapshot/" + c.TenantID + "/" + name)
	defer unlock()
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskSnapshot, name)
	if err != nil {
		return err
	}
	_, sp := snapshotOf(d)
	sn, err := s.snapshotter(ctx, d.Node)
	if err != nil {
		return err
	}
	if err := sn.DeleteSnapshot(ctx, sp.Runtime); err != nil {
		return fmt.Errorf("%w: delete snapshot %s: %v", ErrUnavailable, name, err)
	}
	if err := s.st.DeleteDisk(ctx, sandboxrec.DiskSnapshot, c.TenantID, name); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete snapshot %s: %w", name, err)
	}
	return nil
}

// resolveSnapshot fills in req's runtime snapshot from the caller's
// snapshot req.Snapshot: its template becomes the sandbox's.
func (s *Service) resolveSnapshot(ctx context.Context, c Caller, req *CreateRequest, from *origin) error {
	if req.Snapshot == "" || from.snapshot != "" {
		return nil
	}
	d, err := s.ownDisk(ctx, c, sandboxrec.DiskSnapshot, req.Snapshot)
	if err != nil {
		return err
	}
	_, sp := snapshotOf(d)
	if req.Template != "" && req.Template != sp.Template {
		return fmt.Errorf("%w: snapshot %s was taken on template %s, not %s", ErrInvalid, req.Snapshot, sp.Template, clip(req.Template))
	}
	if req.Build {
		return fmt.Errorf("%w: a template build cannot start from a snapshot", ErrInvalid)
	}
	req.Template, from.snapshot, from.node = sp.Template, sp.Runtime, d.Node
	return nil
}
