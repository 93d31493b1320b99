package api

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// The fake's pause, snapshots and forks: states and records in memory,
// with the real one's ownership rules.

var fakeSnapshots = struct {
	sync.Mutex
	m map[*fakeManager]map[string]sandbox.Snapshot // each inner map guarded by its manager's mu
}{m: map[*fakeManager]map[string]sandbox.Snapshot{}}

// snaps is m's snapshots by tenant/name.
func snaps(m *fakeManager) map[string]sandbox.Snapshot {
	fakeSnapshots.Lock()
	defer fakeSnapshots.Unlock()
	if fakeSnapshots.m[m] == nil {
		fakeSnapshots.m[m] = map[string]sandbox.Snapshot{}
	}
	return fakeSnapshots.m[m]
}

func (m *fakeManager) setState(c sandbox.Caller, id, from, to string) (sandboxrec.Sandbox, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return sandboxrec.Sandbox{}, err
	}
	if sb.State != from && sb.State != to {
		return sandboxrec.Sandbox{}, fmt.Errorf("%w: sandbox %s is %s", sandbox.ErrConflict, id, sb.State)
	}
	sb.State = to
	m.sandboxes[id] = sb
	return sb, nil
}

func (m *fakeManager) Pause(_ context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error) {
	return m.setState(c, id, sandboxrec.Running, sandboxrec.Paused)
}

func (m *fakeManager) Resume(_ context.Context, c sandbox.Caller, id string) (sandboxrec.Sandbox, error) {
	return m.setState(c, id, sandboxrec.Paused, sandboxrec.Running)
}

func (m *fakeManager) CreateSnapshot(_ context.Context, c sandbox.Caller, id, name string) (sandbox.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return sandbox.Snapshot{}, err
	}
	if name == "" {
		name = fmt.Sprintf("snap-%d", len(snaps(m))+1)
	}
	key := c.TenantID + "/" + name
	if _, ok := snaps(m)[key]; ok {
		return sandbox.Snapshot{}, fmt.Errorf("%w: snapshot %s exists", sandbox.ErrConflict, name)
	}
	snap := sandbox.Snapshot{Name: name, Sandbox: id, Template: sb.Template, Node: "local", SizeBytes: 4096, CreatedAt: t0}
	snaps(m)[key] = snap
	return snap, nil
}

func (m *fakeManager) Snapshots(_ context.Context, c sandbox.Caller) ([]sandbox.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []sandbox.Snapshot{}
	for key, snap := range snaps(m) {
		if key == c.TenantID+"/"+snap.Name {
			out = append(out, snap)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *fakeManager) GetSnapshot(_ context.Context, c sandbox.Caller, name string) (sandbox.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	snap, ok := snaps(m)[c.TenantID+"/"+name]
	if !ok {
		return sandbox.Snapshot{}, fmt.Errorf("%w: snapshot %s", sandbox.ErrNotFound, name)
	}
	return snap, nil
}

func (m *fakeManager) DeleteSnapshot(ctx context.Context, c sandbox.Caller, name string) error {
	if _, err := m.GetSnapshot(ctx, c, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(snaps(m), c.TenantID+"/"+name)
	return nil
}

func (m *fakeManager) Fork(ctx context.Context, c sandbox.Caller, id string, req sandbox.ForkRequest) ([]sandboxrec.Sandbox, error) {
	m.mu.Lock()
	parent, err := m.lookup(c, id)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if req.Count < 1 || req.Count > sandbox.MaxForks {
		return nil, fmt.Errorf("%w: count %d", sandbox.ErrInvalid, req.Count)
	}
	var out []sandboxrec.Sandbox
	for range req.Count {
		cr := req.CreateRequest
		cr.Template = parent.Template
		sb, err := m.Create(ctx, c, cr)
		if err != nil {
			return nil, err
		}
		out = append(out, sb)
	}
	return out, nil
}

// The fake keeps no volumes: each call says so, as a server whose runtime
// cannot keep them would.
func (m *fakeManager) CreateVolume(context.Context, sandbox.Caller, sandbox.VolumeRequest) (sandbox.Volume, error) {
	return sandbox.Volume{}, fmt.Errorf("%w: the fake keeps no volumes", sandbox.ErrUnavailable)
}

func (m *fakeManager) Volumes(context.Context, sandbox.Caller) ([]sandbox.Volume, error) {
	return []sandbox.Volume{}, nil
}

func (m *fakeManager) GetVolume(_ context.Context, _ sandbox.Caller, name string) (sandbox.Volume, error) {
	return sandbox.Volume{}, fmt.Errorf("%w: volume %s", sandbox.ErrNotFound, name)
}

func (m *fakeManager) DeleteVolume(_ context.Context, _ sandbox.Caller, name string) error {
	return fmt.Errorf("%w: volume %s", sandbox.ErrNotFound, name)
}
