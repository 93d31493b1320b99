// Package client is the Go client of Airlock's REST API (docs/API.md). It
// mirrors the API's JSON in its own types and imports nothing of the
// server, so programs outside this module can use it. It streams: file
// uploads and downloads and exec output go through as they come and are
// never held in memory whole. It never retries a request on its own: an
// exec or an upload is not idempotent.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client talks to one Airlock server with one credential (an API key
// "alk_..." or a sandbox token "alt_..."). It is safe for concurrent use.
type Client struct {
	base string
	key  string
	hc   *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client that carries requests. Give it no
// Timeout if you stream: the timeout would cut long execs and transfers;
// bound calls with their context instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:7070") that authenticates with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Health reports whether the server answers GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.doJSON(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// do sends a request and returns the response of a 2xx answer; any other
// answer becomes an *Error and its body is closed.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// doJSON sends in (if not nil) as JSON and decodes the answer into out (if
// not nil).
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	hdr := http.Header{}
	if in != nil {
		b, err := marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
		hdr.Set("Content-Type", "application/json")
	}
	if out != nil {
		hdr.Set("Accept", "application/json")
	}
	resp, err := c.do(ctx, method, path, q, body, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeJSON(resp, out)
}

// marshal is json.Marshal without HTML's escapes: a request body is JSON
// for the server, never HTML, and a "<" in stdin stays one byte, not six
// (the server bounds a JSON body's bytes).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeJSON decodes a 2xx answer's body into out (if not nil) and drains
// the rest, so that the connection is reused.
func decodeJSON(resp *http.Response, out any) error {
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("decode answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
		}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// sandboxPath is /v1/sandboxes/{id} followed by suffix, with the id escaped
// so that it cannot name another route ("../tenants").
func sandboxPath(id, suffix string) string {
	return "/v1/sandboxes/" + url.PathEscape(id) + suffix
}

// HasKey reports whether the client has a credential to send.
func (c *Client) HasKey() bool { return c.key != "" }
