package client

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
)

// WriteFile writes r's bytes to path in the sandbox, creating or replacing
// the file, with permissions mode (0: the server's default). The body is
// streamed as r yields it, so r may be larger than memory. It returns the
// size written.
func (c *Client) WriteFile(ctx context.Context, id, path string, r io.Reader, mode fs.FileMode) (int64, error) {
	q := url.Values{"path": {path}}
	if mode != 0 {
		q.Set("mode", octal(mode))
	}
	if r == nil {
		r = http.NoBody
	}
	// NopCloser: the transport closes a body that is a Closer, and r is the
	// caller's to close. It also hides bytes.Reader and friends from
	// NewRequest, so every body goes out chunked, as it comes.
	hdr := http.Header{"Content-Type": {"application/octet-stream"}}
	resp, err := c.do(ctx, http.MethodPut, sandboxPath(id, "/files"), q, io.NopCloser(r), hdr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var ans struct {
		Size int64 `json:"size"`
	}
	if err := decodeJSON(resp, &ans); err != nil {
		return 0, err
	}
	return ans.Size, nil
}

// ReadFile copies the file at path in the sandbox to w as it arrives and
// returns the number of bytes copied.
func (c *Client) ReadFile(ctx context.Context, id, path string, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, sandboxPath(id, "/files"), url.Values{"path": {path}}, nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// ListDir lists the directory at path.
func (c *Client) ListDir(ctx context.Context, id, path string) ([]FileEntry, error) {
	var r struct {
		Entries []FileEntry `json:"entries"`
	}
	q := url.Values{"path": {path}, "list": {"1"}}
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/files"), q, nil, &r)
	return r.Entries, err
}

// Remove deletes the file or empty directory at path, or with recursive
// the directory and everything in it.
func (c *Client) Remove(ctx context.Context, id, path string, recursive bool) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "1")
	}
	return c.doJSON(ctx, http.MethodDelete, sandboxPath(id, "/files"), q, nil, nil)
}

// Mkdir creates the directory path with permissions mode (0: the server's
// default).
func (c *Client) Mkdir(ctx context.Context, id, path string, mode fs.FileMode) error {
	body := struct {
		Path string `json:"path"`
		Mode string `json:"mode,omitempty"`
	}{Path: path}
	if mode != 0 {
		body.Mode = octal(mode)
	}
	return c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/files/mkdir"), nil, body, nil)
}

// Move renames from to to inside the sandbox.
func (c *Client) Move(ctx context.Context, id, from, to string) error {
	body := struct {
		From string `json:"from"`
		To   string `json:"to"`
	}{from, to}
	return c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/files/move"), nil, body, nil)
}

// octal is the API's form of a mode: "0644".
func octal(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }
