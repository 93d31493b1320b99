package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	sandboxesURI = "airlock://sandboxes"
	// filesPrefix is followed by the sandbox id, "/files" and the file's
	// absolute path: airlock://sandboxes/sb-1/files/home/user/a.txt.
	filesPrefix = "airlock://sandboxes/"
)

// tenantOnly marks a resource read as one caller's data: no shared cache
// (a gateway, a proxy) may serve it to anyone else. Without it the SDK
// sends 2026-07-28 clients cacheScope "public" (SEP-2549), which would let
// one tenant's sandbox list or file reach another; TTL 0, as a sandbox
// changes under it at any time.
var tenantOnly = mcpsdk.Cacheable{CacheScope: "private"}

func (b *bridge) addResources(s *mcpsdk.Server) {
	s.AddResource(&mcpsdk.Resource{URI: sandboxesURI, Name: "sandboxes", MIMEType: "application/json",
		Description: "Your running sandboxes, as JSON."}, b.readSandboxes)
	// {+path}: a path keeps its slashes (RFC 6570 reserved expansion).
	s.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: filesPrefix + "{id}/files/{+path}", Name: "sandbox-file",
		Description: "A file in a sandbox, read-only, by absolute path: airlock://sandboxes/ID/files/home/user/notes.txt. " +
			"Text comes back as text, anything else as a blob."}, b.readSandboxFile)
}

func (b *bridge) readSandboxes(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, err
	}
	sbs, err := listSandboxes(ctx, c, false)
	if err != nil {
		return nil, toolError(ctx, c, "", err)
	}
	out := listOut{Sandboxes: []sandboxInfo{}}
	for _, sb := range sbs {
		out.Sandboxes = append(out.Sandboxes, info(sb))
	}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: sandboxesURI, MIMEType: "application/json", Text: string(js)}}, Cacheable: tenantOnly}, nil
}

// parseFileURI splits airlock://sandboxes/ID/files/PATH into the id and
// the absolute path (percent-escapes undone, so a client that escaped the
// slashes is understood too).
func parseFileURI(uri string) (id, p string, err error) {
	rest, ok := strings.CutPrefix(uri, filesPrefix)
	if !ok {
		return "", "", fmt.Errorf("not a sandbox file URI: %s", uri)
	}
	id, rest, ok = strings.Cut(rest, "/files/")
	if !ok || id == "" || strings.Contains(id, "/") || rest == "" {
		return "", "", fmt.Errorf("want airlock://sandboxes/ID/files/PATH, got %s", uri)
	}
	if p, err = url.PathUnescape(rest); err != nil {
		return "", "", fmt.Errorf("path in %s: %v", uri, err)
	}
	return id, "/" + strings.TrimLeft(p, "/"), nil
}

func (b *bridge) readSandboxFile(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, err
	}
	uri := req.Params.URI
	id, p, err := parseFileURI(uri)
	if err != nil {
		return nil, err
	}
	data, size, err := readHead(ctx, c, id, p, readCap)
	if err != nil {
		return nil, toolError(ctx, c, id, err)
	}
	if size > int64(len(data)) {
		return nil, fmt.Errorf("%s is %d bytes, over the %d a resource read returns; use the read_file or run_command tools", p, size, readCap)
	}
	rc := &mcpsdk.ResourceContents{URI: uri}
	if isText(data, false) {
		rc.Text, rc.MIMEType = string(data), "text/plain; charset=utf-8"
	} else {
		rc.Blob, rc.MIMEType = data, "application/octet-stream"
	}
	if mt := mime.TypeByExtension(path.Ext(p)); mt != "" {
		rc.MIMEType = mt
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{rc}, Cacheable: tenantOnly}, nil
}
