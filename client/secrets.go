package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// SecretInject sets Header to Format (with "{value}" replaced) on requests
// to the secret's hosts that lack that header.
type SecretInject struct {
	Header string `json:"header"`
	Format string `json:"format,omitempty"`
}

// SecretRequest creates a secret. Value is write-only.
type SecretRequest struct {
	Name   string        `json:"name"`
	Value  string        `json:"value"`
	Hosts  []string      `json:"hosts"`
	Inject *SecretInject `json:"inject,omitempty"`
	Body   bool          `json:"body,omitempty"`
}

// RotateSecretRequest replaces a secret's value; nil fields keep theirs.
type RotateSecretRequest struct {
	Value  string        `json:"value"`
	Hosts  []string      `json:"hosts,omitempty"`
	Inject *SecretInject `json:"inject,omitempty"`
	Body   *bool         `json:"body,omitempty"`
}

// Secret is a secret as the server describes it: never its value.
type Secret struct {
	Name      string        `json:"name"`
	Hosts     []string      `json:"hosts"`
	Inject    *SecretInject `json:"inject,omitempty"`
	Body      bool          `json:"body"`
	CreatedAt time.Time     `json:"created_at"`
	RotatedAt time.Time     `json:"rotated_at,omitzero"`
}

// CreateSecret stores a secret of the caller's tenant.
func (c *Client) CreateSecret(ctx context.Context, req SecretRequest) (Secret, error) {
	var s Secret
	err := c.doJSON(ctx, http.MethodPost, "/v1/secrets", nil, req, &s)
	return s, err
}

// ListSecrets lists the tenant's secrets.
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	var out struct {
		Secrets []Secret `json:"secrets"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out)
	return out.Secrets, err
}

// RotateSecret replaces a secret's value; bound sandboxes use the new one
// from their next request.
func (c *Client) RotateSecret(ctx context.Context, name string, req RotateSecretRequest) (Secret, error) {
	var s Secret
	err := c.doJSON(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(name), nil, req, &s)
	return s, err
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/secrets/"+url.PathEscape(name), nil, nil, nil)
}
