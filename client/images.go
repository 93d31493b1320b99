package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// ImportImageRequest makes a template from an OCI or Docker image in a
// registry (admin only). The server pulls it through its egress proxy's
// checks, from the image's registry host and the Allow hosts.
type ImportImageRequest struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Credentials names a secret ("user:password" or a token) bound to
	// the registry's host.
	Credentials string   `json:"credentials,omitempty"`
	Allow       []string `json:"allow,omitempty"`
	Insecure    bool     `json:"insecure,omitempty"`
	// Start is run in every sandbox made from the template.
	Start *TemplateStart `json:"start,omitempty"`
}

// ImageProgress is how far an import got: Bytes of layer Layer (of
// Layers) read, of Total.
type ImageProgress struct {
	Layer  int    `json:"layer"`
	Layers int    `json:"layers"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
	Total  int64  `json:"total"`
	Done   bool   `json:"done"`
}

// ImportImage pulls req.Image into the template req.Name, calling
// progress (if not nil) as layers download.
func (c *Client) ImportImage(ctx context.Context, req ImportImageRequest, progress func(ImageProgress)) (Template, error) {
	b, err := marshal(req)
	if err != nil {
		return Template{}, err
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	return c.importStream(ctx, http.MethodPost, "/v1/templates", nil, bytes.NewReader(b), hdr, progress)
}

// UploadImage makes the template name from a `docker save` or OCI layout
// tarball, fileName what it is called (kept as the template's image).
func (c *Client) UploadImage(ctx context.Context, name string, tarball io.Reader, fileName, description string, progress func(ImageProgress)) (Template, error) {
	q := url.Values{}
	if description != "" {
		q.Set("description", description)
	}
	if fileName != "" {
		q.Set("filename", fileName)
	}
	hdr := http.Header{"Content-Type": {"application/x-tar"}}
	return c.importStream(ctx, http.MethodPut, "/v1/templates/"+url.PathEscape(name)+"/image", q, tarball, hdr, progress)
}

func (c *Client) importStream(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header, progress func(ImageProgress)) (Template, error) {
	var t Template
	err := c.streamSSE(ctx, method, path, q, body, hdr, "import", func(ev sseEvent) (bool, error) {
		switch ev.Type {
		case "progress":
			var p ImageProgress
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return true, fmt.Errorf("import progress: %w", err)
			}
			if progress != nil {
				progress(p)
			}
			return false, nil
		case "template":
			return true, json.Unmarshal(ev.Data, &t)
		}
		return false, nil
	})
	return t, err
}
