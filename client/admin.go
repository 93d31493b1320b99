package client

import (
	"context"
	"net/http"
	"net/url"
)

// CreateTenant creates a tenant (admin key only).
func (c *Client) CreateTenant(ctx context.Context, req TenantRequest) (Tenant, error) {
	var t Tenant
	err := c.doJSON(ctx, http.MethodPost, "/v1/tenants", nil, req, &t)
	return t, err
}

// UpdateTenant changes the quotas of the tenant named name that q sets
// (admin key only) and returns the tenant.
func (c *Client) UpdateTenant(ctx context.Context, name string, q TenantQuota) (Tenant, error) {
	var t Tenant
	err := c.doJSON(ctx, http.MethodPatch, "/v1/tenants/"+url.PathEscape(name), nil, q, &t)
	return t, err
}

// ListTenants lists every tenant (admin key only).
func (c *Client) ListTenants(ctx context.Context) ([]Tenant, error) {
	var r struct {
		Tenants []Tenant `json:"tenants"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/tenants", nil, nil, &r)
	return r.Tenants, err
}

// CreateKey creates an API key for the tenant named tenant (admin key
// only). The secret is in the answer and nowhere else, ever.
func (c *Client) CreateKey(ctx context.Context, tenant, name string) (NewKey, error) {
	var k NewKey
	body := struct {
		Tenant string `json:"tenant"`
		Name   string `json:"name,omitempty"`
	}{tenant, name}
	err := c.doJSON(ctx, http.MethodPost, "/v1/keys", nil, body, &k)
	return k, err
}

// ListKeys lists keys: all of them for the admin key, the own tenant's
// otherwise.
func (c *Client) ListKeys(ctx context.Context) ([]Key, error) {
	var r struct {
		Keys []Key `json:"keys"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/keys", nil, nil, &r)
	return r.Keys, err
}

// DeleteKey revokes a key (admin key only).
func (c *Client) DeleteKey(ctx context.Context, id string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/keys/"+url.PathEscape(id), nil, nil, nil)
}

// ServerInfo is what GET /v1/server tells an admin of the server.
type ServerInfo struct {
	DataDir       string `json:"data_dir"`
	Version       string `json:"version"`
	AgentProtocol int    `json:"agent_protocol"`
	// SandboxAgents counts the running sandboxes by the agent protocol
	// version they speak ("unknown" where it could not be had).
	SandboxAgents map[string]int `json:"sandbox_agents"`
}

// ServerInfo asks the server about itself (admin key).
func (c *Client) ServerInfo(ctx context.Context) (ServerInfo, error) {
	var si ServerInfo
	err := c.doJSON(ctx, http.MethodGet, "/v1/server", nil, nil, &si)
	return si, err
}
