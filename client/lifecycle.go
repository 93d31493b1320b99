package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// PauseSandbox freezes every process of the sandbox: its memory is kept,
// it uses no CPU and its lifetime clock stops until ResumeSandbox.
func (c *Client) PauseSandbox(ctx context.Context, id string) (Sandbox, error) {
	var sb Sandbox
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/pause"), nil, nil, &sb)
	return sb, err
}

// ResumeSandbox thaws a paused sandbox.
func (c *Client) ResumeSandbox(ctx context.Context, id string) (Sandbox, error) {
	var sb Sandbox
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/resume"), nil, nil, &sb)
	return sb, err
}

// Snapshot is a sandbox's writable layer saved at one instant.
type Snapshot struct {
	Name      string    `json:"name"`
	Sandbox   string    `json:"sandbox"`
	Template  string    `json:"template"`
	Node      string    `json:"node"`
	SizeBytes int64     `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateSnapshot saves the sandbox's files (workspace and all else it
// wrote) as the snapshot name ("": the server picks one).
func (c *Client) CreateSnapshot(ctx context.Context, id, name string) (Snapshot, error) {
	var s Snapshot
	body := struct {
		Name string `json:"name,omitempty"`
	}{name}
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/snapshots"), nil, body, &s)
	return s, err
}

// ListSnapshots lists the tenant's snapshots.
func (c *Client) ListSnapshots(ctx context.Context) ([]Snapshot, error) {
	var out struct {
		Snapshots []Snapshot `json:"snapshots"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/snapshots", nil, nil, &out)
	return out.Snapshots, err
}

// GetSnapshot returns one snapshot.
func (c *Client) GetSnapshot(ctx context.Context, name string) (Snapshot, error) {
	var s Snapshot
	err := c.doJSON(ctx, http.MethodGet, "/v1/snapshots/"+url.PathEscape(name), nil, nil, &s)
	return s, err
}

// DeleteSnapshot deletes a snapshot; sandboxes made from it keep their
// copy.
func (c *Client) DeleteSnapshot(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(name), nil, nil, nil)
}

// ForkRequest is count forks of a sandbox; the CreateRequest's fields
// override what the forks take from their parent.
type ForkRequest struct {
	Count int
	CreateRequest
}

func (r ForkRequest) MarshalJSON() ([]byte, error) {
	b, err := r.CreateRequest.MarshalJSON()
	if err != nil {
		return nil, err
	}
	// {"count":N, ...the create request's fields}
	out := []byte(`{"count":` + strconv.Itoa(r.Count))
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// ForkSandbox makes req.Count sandboxes whose files are the sandbox's at
// this instant (processes and memory are not copied).
func (c *Client) ForkSandbox(ctx context.Context, id string, req ForkRequest) ([]Sandbox, error) {
	var out struct {
		Sandboxes []Sandbox `json:"sandboxes"`
	}
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/fork"), nil, req, &out)
	return out.Sandboxes, err
}

// Volume is a tenant's directory with a disk limit of its own that
// outlives the sandboxes that mount it.
type Volume struct {
	Name      string    `json:"name"`
	SizeMB    int64     `json:"size_mb"`
	Node      string    `json:"node"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateVolume makes an empty volume of sizeMB ("" node: the server's
// own host).
func (c *Client) CreateVolume(ctx context.Context, name string, sizeMB int64, node string) (Volume, error) {
	var v Volume
	body := struct {
		Name   string `json:"name"`
		SizeMB int64  `json:"size_mb"`
		Node   string `json:"node,omitempty"`
	}{name, sizeMB, node}
	err := c.doJSON(ctx, http.MethodPost, "/v1/volumes", nil, body, &v)
	return v, err
}

// ListVolumes lists the tenant's volumes.
func (c *Client) ListVolumes(ctx context.Context) ([]Volume, error) {
	var out struct {
		Volumes []Volume `json:"volumes"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/volumes", nil, nil, &out)
	return out.Volumes, err
}

// GetVolume returns one volume.
func (c *Client) GetVolume(ctx context.Context, name string) (Volume, error) {
	var v Volume
	err := c.doJSON(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(name), nil, nil, &v)
	return v, err
}

// DeleteVolume deletes a volume with all it holds; refused while a
// sandbox mounts it.
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name), nil, nil, nil)
}
