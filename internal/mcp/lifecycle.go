package mcp

import (
	"context"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// Pause and resume, snapshots and forks: an agent keeps a sandbox
// without paying for its CPU, saves its work as a snapshot, or branches
// it to try several paths.

type stateOut struct {
	SandboxID string    `json:"sandbox_id"`
	State     string    `json:"state" jsonschema:"running or paused"`
	ExpiresAt time.Time `json:"expires_at" jsonschema:"while paused: when it is destroyed unless resumed"`
}

type snapshotIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox whose files to save"`
	Name      string `json:"name,omitempty" jsonschema:"the snapshot's name (default: one is picked)"`
}

type snapshotOut struct {
	Name      string `json:"name" jsonschema:"pass it as snapshot to sandbox_create"`
	SizeBytes int64  `json:"size_bytes"`
}

type snapshotRef struct {
	Name string `json:"name" jsonschema:"the snapshot's name"`
}

type snapshotListIn struct {
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"only the snapshots of this sandbox (default: all yours)"`
}

type snapshotList struct {
	Snapshots []client.Snapshot `json:"snapshots"`
}

type forkIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox to fork"`
	Count     int    `json:"count" jsonschema:"how many forks (1..50)"`
}

type forkOut struct {
	SandboxIDs []string `json:"sandbox_ids"`
}

func (b *bridge) addLifecycleTools(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_pause", Description: "Freeze every process of a sandbox: its memory and processes are kept, it uses no CPU and its " +
		"lifetime clock stops until sandbox_resume. Commands and files answer 'paused' meanwhile."}, b.sandboxPause)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_resume", Description: "Thaw a paused sandbox; its processes go on where they were."}, b.sandboxResume)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_snapshot", Description: "Save a sandbox's files (its workspace and all else it wrote; not its processes or memory) " +
		"as a snapshot that outlives it; start a new sandbox from it with sandbox_create's snapshot."}, b.sandboxSnapshot)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "snapshot_list", Description: "List your snapshots: name, the sandbox it was taken of, size, when."}, b.snapshotList)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "snapshot_delete", Description: "Delete a snapshot (sandboxes made from it keep their copy)."}, b.snapshotDelete)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_fork", Description: "Create count new sandboxes whose files are this sandbox's now, to try several paths " +
		"from one state (processes and memory are not copied)."}, b.sandboxFork)
}

func (b *bridge) setState(ctx context.Context, req *mcpsdk.CallToolRequest, id string, do func(*client.Client, context.Context, string) (client.Sandbox, error)) (*mcpsdk.CallToolResult, stateOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, stateOut{}, err
	}
	sb, err := do(c, ctx, id)
	if err != nil {
		return nil, stateOut{}, toolError(ctx, c, id, err)
	}
	return nil, stateOut{SandboxID: sb.ID, State: sb.State, ExpiresAt: sb.ExpiresAt}, nil
}

func (b *bridge) sandboxPause(ctx context.Context, req *mcpsdk.CallToolRequest, in sandboxRef) (*mcpsdk.CallToolResult, stateOut, error) {
	return b.setState(ctx, req, in.SandboxID, (*client.Client).PauseSandbox)
}

func (b *bridge) sandboxResume(ctx context.Context, req *mcpsdk.CallToolRequest, in sandboxRef) (*mcpsdk.CallToolResult, stateOut, error) {
	return b.setState(ctx, req, in.SandboxID, (*client.Client).ResumeSandbox)
}

func (b *bridge) sandboxSnapshot(ctx context.Context, req *mcpsdk.CallToolRequest, in snapshotIn) (*mcpsdk.CallToolResult, snapshotOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, snapshotOut{}, err
	}
	s, err := c.CreateSnapshot(ctx, in.SandboxID, in.Name)
	if err != nil {
		return nil, snapshotOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, snapshotOut{Name: s.Name, SizeBytes: s.SizeBytes}, nil
}

func (b *bridge) snapshotList(ctx context.Context, req *mcpsdk.CallToolRequest, in snapshotListIn) (*mcpsdk.CallToolResult, snapshotList, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, snapshotList{}, err
	}
	l, err := c.ListSnapshots(ctx)
	if err != nil {
		return nil, snapshotList{}, toolError(ctx, c, "", err)
	}
	out := snapshotList{Snapshots: []client.Snapshot{}}
	for _, s := range l {
		if in.SandboxID == "" || s.Sandbox == in.SandboxID {
			out.Snapshots = append(out.Snapshots, s)
		}
	}
	return nil, out, nil
}

func (b *bridge) snapshotDelete(ctx context.Context, req *mcpsdk.CallToolRequest, in snapshotRef) (*mcpsdk.CallToolResult, destroyOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, destroyOut{}, err
	}
	if err := c.DeleteSnapshot(ctx, in.Name); err != nil {
		return nil, destroyOut{}, toolError(ctx, c, "", err)
	}
	return nil, destroyOut{Destroyed: true}, nil
}

func (b *bridge) sandboxFork(ctx context.Context, req *mcpsdk.CallToolRequest, in forkIn) (*mcpsdk.CallToolResult, forkOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, forkOut{}, err
	}
	sbs, err := c.ForkSandbox(ctx, in.SandboxID, client.ForkRequest{Count: in.Count})
	if err != nil {
		return nil, forkOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := forkOut{SandboxIDs: []string{}}
	for _, sb := range sbs {
		out.SandboxIDs = append(out.SandboxIDs, sb.ID)
	}
	return nil, out, nil
}
