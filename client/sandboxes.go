package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// CreateSandbox creates a sandbox and returns it once it runs.
func (c *Client) CreateSandbox(ctx context.Context, req CreateRequest) (Sandbox, error) {
	var sb Sandbox
	err := c.doJSON(ctx, http.MethodPost, "/v1/sandboxes", nil, req, &sb)
	return sb, err
}

// GetSandbox returns one sandbox.
func (c *Client) GetSandbox(ctx context.Context, id string) (Sandbox, error) {
	var sb Sandbox
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, ""), nil, nil, &sb)
	return sb, err
}

// ListSandboxes returns one page of the caller's sandboxes; pass the
// page's Next as opts.After for the next one.
func (c *Client) ListSandboxes(ctx context.Context, opts ListOptions) (Page, error) {
	q := url.Values{}
	if opts.State != "" {
		q.Set("state", opts.State)
	}
	for k, v := range opts.Metadata {
		q.Set("metadata."+k, v)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	var p Page
	err := c.doJSON(ctx, http.MethodGet, "/v1/sandboxes", q, nil, &p)
	return p, err
}

// DeleteSandbox destroys a sandbox.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, sandboxPath(id, ""), nil, nil, nil)
}

// SetTimeout makes the sandbox expire d from now (whole seconds, rounded
// up).
func (c *Client) SetTimeout(ctx context.Context, id string, d time.Duration) (Sandbox, error) {
	var sb Sandbox
	body := struct {
		TimeoutS int64 `json:"timeout_s"`
	}{seconds(d)}
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/timeout"), nil, body, &sb)
	return sb, err
}

// CreateToken returns a credential for this sandbox only, valid for ttl
// (whole seconds, rounded up): hand it to an agent that must not reach
// other sandboxes.
func (c *Client) CreateToken(ctx context.Context, id string, ttl time.Duration) (Token, error) {
	var t Token
	body := struct {
		TTLS int64 `json:"ttl_s"`
	}{seconds(ttl)}
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/tokens"), nil, body, &t)
	return t, err
}

// GetNetwork returns a sandbox's egress policy.
func (c *Client) GetNetwork(ctx context.Context, id string) (NetworkPolicy, error) {
	var p NetworkPolicy
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/network"), nil, nil, &p)
	return p, err
}

// SetNetwork replaces a running sandbox's egress policy; new connections
// follow it at once.
func (c *Client) SetNetwork(ctx context.Context, id string, p NetworkPolicy) (NetworkPolicy, error) {
	var out NetworkPolicy
	err := c.doJSON(ctx, http.MethodPut, sandboxPath(id, "/network"), nil, p, &out)
	return out, err
}

// NetworkLog returns up to limit (0: the server's page size) entries of a
// sandbox's egress log with a seq above after.
func (c *Client) NetworkLog(ctx context.Context, id string, after int64, limit int) ([]NetEvent, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Events []NetEvent `json:"events"`
	}
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/network/log"), q, nil, &out)
	return out.Events, err
}
