package mcp

import (
	"context"
	"errors"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

type createIn struct {
	Template string            `json:"template,omitempty" jsonschema:"template to boot (default base: a Linux userland with the host's /usr)"`
	MemoryMB int64             `json:"memory_mb,omitempty" jsonschema:"memory limit in MiB (default 512)"`
	CPUs     float64           `json:"cpus,omitempty" jsonschema:"CPU limit, may be fractional (default 1)"`
	TimeoutS int64             `json:"timeout_s,omitempty" jsonschema:"seconds until the sandbox expires and is destroyed (default 300, at most 86400); extend later with sandbox_extend"`
	Allow    []string          `json:"allow,omitempty" jsonschema:"domains the sandbox may reach over the network (e.g. pypi.org, *.github.com); none by default"`
	Secrets  []string          `json:"secrets,omitempty" jsonschema:"names of stored secrets the egress proxy injects into requests to their hosts (the sandbox never sees their values)"`
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"labels to find the sandbox by later"`
	Snapshot string            `json:"snapshot,omitempty" jsonschema:"start from this snapshot's files (from sandbox_snapshot)"`
}

type createOut struct {
	SandboxID string    `json:"sandbox_id" jsonschema:"id to pass to every other tool"`
	ExpiresAt time.Time `json:"expires_at" jsonschema:"when the sandbox is destroyed unless extended"`
}

type sandboxRef struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id (from sandbox_create or sandbox_list)"`
}

type sandboxInfo struct {
	SandboxID string            `json:"sandbox_id"`
	State     string            `json:"state" jsonschema:"creating, running, paused, stopped or failed"`
	Reason    string            `json:"reason,omitempty" jsonschema:"why it stopped or failed"`
	Template  string            `json:"template"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	MemoryMB  int64             `json:"memory_mb"`
	CPUs      float64           `json:"cpus"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

type listIn struct {
	All bool `json:"all,omitempty" jsonschema:"also list stopped and failed sandboxes (default: running and paused ones only)"`
}

type listOut struct {
	Sandboxes []sandboxInfo `json:"sandboxes"`
}

type destroyOut struct {
	Destroyed bool `json:"destroyed"`
}

type extendIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	TimeoutS  int64  `json:"timeout_s" jsonschema:"seconds from now until it expires (1..86400)"`
}

func info(sb client.Sandbox) sandboxInfo {
	return sandboxInfo{SandboxID: sb.ID, State: sb.State, Reason: sb.Reason, Template: sb.Template, CreatedAt: sb.CreatedAt,
		ExpiresAt: sb.ExpiresAt, MemoryMB: sb.Limits.MemoryMB, CPUs: sb.Limits.CPUs, Metadata: sb.Metadata}
}

func (b *bridge) addSandboxTools(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_create", Description: "Create an isolated Linux sandbox and return its sandbox_id. " +
		"It has no network unless you list domains in allow, and it is destroyed when timeout_s runs out (default 300 s). " +
		"Destroy it with sandbox_destroy when you are done."}, b.sandboxCreate)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_list", Description: "List your sandboxes (running and paused ones unless all is set) with their state and expiry.",
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}, b.sandboxList)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_destroy", Description: "Destroy a sandbox and everything in it (files, processes, sessions). Its audit log is kept."}, b.sandboxDestroy)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "sandbox_extend", Description: "Set a running sandbox to expire timeout_s seconds from now (1..86400), so long work is not cut off."}, b.sandboxExtend)
}

func (b *bridge) sandboxCreate(ctx context.Context, req *mcpsdk.CallToolRequest, in createIn) (*mcpsdk.CallToolResult, createOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, createOut{}, err
	}
	cr := client.CreateRequest{Template: in.Template, MemoryMB: in.MemoryMB, CPUs: in.CPUs, Secrets: in.Secrets, Metadata: in.Metadata,
		Timeout: time.Duration(in.TimeoutS) * time.Second, Snapshot: in.Snapshot}
	if len(in.Allow) > 0 {
		cr.Network = client.AllowOnly(in.Allow...)
	}
	sb, err := c.CreateSandbox(ctx, cr)
	if err != nil {
		return nil, createOut{}, toolError(ctx, c, "", err)
	}
	return nil, createOut{SandboxID: sb.ID, ExpiresAt: sb.ExpiresAt}, nil
}

func (b *bridge) sandboxList(ctx context.Context, req *mcpsdk.CallToolRequest, in listIn) (*mcpsdk.CallToolResult, listOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, listOut{}, err
	}
	sbs, err := listSandboxes(ctx, c, in.All)
	if err != nil {
		return nil, listOut{}, toolError(ctx, c, "", err)
	}
	out := listOut{Sandboxes: []sandboxInfo{}}
	for _, sb := range sbs {
		out.Sandboxes = append(out.Sandboxes, info(sb))
	}
	return nil, out, nil
}

// maxListed bounds a listing: a model cannot use thousands of rows.
const maxListed = 1000

func listSandboxes(ctx context.Context, c *client.Client, all bool) ([]client.Sandbox, error) {
	states := []string{""}
	if !all {
		// The live ones: a paused sandbox keeps its processes for later.
		states = []string{client.StateRunning, client.StatePaused}
	}
	var sbs []client.Sandbox
	for _, state := range states {
		opts := client.ListOptions{Limit: 1000, State: state}
		for len(sbs) < maxListed {
			p, err := c.ListSandboxes(ctx, opts)
			if err != nil {
				return nil, err
			}
			sbs = append(sbs, p.Sandboxes...)
			if p.Next == "" {
				break
			}
			opts.After = p.Next
		}
	}
	return sbs, nil
}

func (b *bridge) sandboxDestroy(ctx context.Context, req *mcpsdk.CallToolRequest, in sandboxRef) (*mcpsdk.CallToolResult, destroyOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, destroyOut{}, err
	}
	if err := c.DeleteSandbox(ctx, in.SandboxID); err != nil {
		return nil, destroyOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, destroyOut{Destroyed: true}, nil
}

func (b *bridge) sandboxExtend(ctx context.Context, req *mcpsdk.CallToolRequest, in extendIn) (*mcpsdk.CallToolResult, createOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, createOut{}, err
	}
	if in.TimeoutS < 1 {
		return nil, createOut{}, errors.New("timeout_s must be between 1 and 86400 seconds")
	}
	sb, err := c.SetTimeout(ctx, in.SandboxID, time.Duration(in.TimeoutS)*time.Second)
	if err != nil {
		return nil, createOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, createOut{SandboxID: sb.ID, ExpiresAt: sb.ExpiresAt}, nil
}
