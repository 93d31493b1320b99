package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// JoinToken is a one-time token a node joins with (airlock node --token).
type JoinToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// CAHash pins the node CA: airlock node --ca-hash.
	CAHash string `json:"ca_hash"`
}

// Node is a host that runs sandboxes for the control plane.
type Node struct {
	Name          string       `json:"name"`
	Addr          string       `json:"addr"`
	State         string       `json:"state"` // joining, ready, draining, lost
	Version       string       `json:"version"`
	Capacity      NodeCapacity `json:"capacity"`
	Use           NodeUse      `json:"use"`
	LastHeartbeat *time.Time   `json:"last_heartbeat"`
	JoinedAt      time.Time    `json:"joined_at"`
	CertExpiresAt time.Time    `json:"certificate_expires_at"`
	LastError     string       `json:"last_error,omitempty"`
}

// NodeCapacity is what a node offers.
type NodeCapacity struct {
	CPUs      int   `json:"cpus"`
	MemoryMB  int64 `json:"memory_mb"`
	DiskMB    int64 `json:"disk_mb"`
	Sandboxes int   `json:"sandboxes"`
}

// NodeUse is what of it is taken (CPUs: the 1-minute load average).
type NodeUse struct {
	CPUs      float64 `json:"cpus"`
	MemoryMB  int64   `json:"memory_mb"`
	DiskMB    int64   `json:"disk_mb"`
	Sandboxes int     `json:"sandboxes"`
}

// CreateJoinToken mints a join token valid for ttl (0: the server's
// default, an hour); admin key only.
func (c *Client) CreateJoinToken(ctx context.Context, ttl time.Duration) (JoinToken, error) {
	var t JoinToken
	body := struct {
		TTLS int64 `json:"ttl_s,omitempty"`
	}{int64(ttl / time.Second)}
	err := c.doJSON(ctx, http.MethodPost, "/v1/nodes/tokens", nil, body, &t)
	return t, err
}

// ListNodes lists the nodes; admin key only.
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	var r struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/nodes", nil, nil, &r)
	return r.Nodes, err
}

// GetNode returns the node with the name; admin key only.
func (c *Client) GetNode(ctx context.Context, name string) (Node, error) {
	var n Node
	err := c.doJSON(ctx, http.MethodGet, "/v1/nodes/"+url.PathEscape(name), nil, nil, &n)
	return n, err
}

// DrainNode stops new placements on the node (drain) or lets them go on
// again; admin key only.
func (c *Client) DrainNode(ctx context.Context, name string, drain bool) (Node, error) {
	var n Node
	method := http.MethodPost
	if !drain {
		method = http.MethodDelete
	}
	err := c.doJSON(ctx, method, "/v1/nodes/"+url.PathEscape(name)+"/drain", nil, nil, &n)
	return n, err
}

// RemoveNode forgets the node; force even while it holds sandboxes. Admin
// key only.
func (c *Client) RemoveNode(ctx context.Context, name string, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	return c.doJSON(ctx, http.MethodDelete, "/v1/nodes/"+url.PathEscape(name), q, nil, nil)
}
