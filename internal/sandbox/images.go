package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/store"
)

// ImportTemplateRequest makes a template from an OCI or Docker image: a
// registry reference, pulled through the egress proxy's rules, or an
// uploaded `docker save` / OCI layout tarball.
type ImportTemplateRequest struct {
	Name        string            `json:"name"`
	Image       string            `json:"image,omitempty"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Credentials names the caller's secret that logs in to the
	// registry: "user:password", or a registry token. The secret's hosts
	// must include the registry's.
	Credentials string `json:"credentials,omitempty"`
	// Allow are more hosts the pull may reach beyond the registry's own
	// (an auth server, a blob CDN), as egress allow-list entries.
	Allow []string `json:"allow,omitempty"`
	// Insecure pulls over plain http (a registry on a private network).
	Insecure bool `json:"insecure,omitempty"`
	// Start is run in every sandbox made from the template.
	Start *runtime.TemplateStart `json:"start,omitempty"`
	// File is an uploaded tarball on this host (the API spools it),
	// FileName what the uploader called it.
	File     string `json:"-"`
	FileName string `json:"-"`
}

// maxImageBytes bounds an image's unpacked size.
const maxImageBytes = 32 << 30

// ImportTemplate pulls an image into a template (admin only), reporting
// each layer's progress to progress (which may be nil).
func (s *Service) ImportTemplate(ctx context.Context, c Caller, req ImportTemplateRequest, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	if !c.Admin {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: only an admin key can import templates", ErrInvalid)
	}
	if len(req.Description) > maxTemplateDescription {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: description is longer than %d bytes", ErrInvalid, maxTemplateDescription)
	}
	if err := validMetadata(req.Labels); err != nil {
		return runtime.TemplateInfo{}, err
	}
	if err := validStart(req.Start); err != nil {
		return runtime.TemplateInfo{}, err
	}
	if (req.Image == "") == (req.File == "") {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: image: give a reference such as registry.example.com/repo:tag (or upload a tarball)", ErrInvalid)
	}
	// Placement imports on the local runtime, or on a node it picks.
	imp, ok := s.rt.(runtime.ImageImporter)
	if !ok {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: this server's runtime cannot import images", ErrUnavailable)
	}
	src := runtime.ImageSource{Ref: req.Image, File: req.File, FileName: req.FileName, Insecure: req.Insecure, MaxBytes: maxImageBytes}
	if req.Image != "" {
		dial, err := s.imageDialer(req)
		if err != nil {
			return runtime.TemplateInfo{}, err
		}
		src.Dial = dial
		if req.Credentials != "" {
			if src.Username, src.Password, err = s.registryLogin(ctx, c, req); err != nil {
				return runtime.TemplateInfo{}, err
			}
		}
	}
	t, err := imp.ImportImage(ctx, runtime.TemplateInfo{Name: req.Name, Description: req.Description, Labels: req.Labels, Start: orNone(req.Start)}, src, progress)
	return t, templateErr(err)
}

// registryHost is the host a reference pulls from, with its port:
// Docker Hub's when the first part names no host, as docker reads it.
func registryHost(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return strings.ToLower(first)
	}
	return "registry-1.docker.io"
}

// imageDialer is how a pull reaches registries: through the egress
// proxy's checks, under an allow-list of the registry's host (Docker
// Hub's auth and blob hosts with it) and req.Allow.
func (s *Service) imageDialer(req ImportTemplateRequest) (func(context.Context, string, string) (net.Conn, error), error) {
	if s.proxy == nil {
		return nil, fmt.Errorf("%w: this server runs without the egress proxy, which every pull goes through", ErrInvalid)
	}
	host := registryHost(req.Image)
	allow := append([]string{host}, req.Allow...)
	if host == "registry-1.docker.io" {
		allow = append(allow, "index.docker.io", "auth.docker.io", "production.cloudflare.docker.com")
	}
	pol := egress.Policy{Mode: egress.ModeAllowlist, Allow: slices.Compact(allow)}
	rules, err := egress.Compile(pol)
	if err != nil {
		return nil, fmt.Errorf("%w: allow: %v", ErrInvalid, err)
	}
	if err := s.proxy.CheckReach(rules.Policy()); err != nil {
		return nil, fmt.Errorf("%w: image %s: %v", ErrInvalid, clip(req.Image), err)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return s.proxy.DialFor(ctx, rules, network, addr)
	}, nil
}

// registryLogin opens the caller's credentials secret, which must be
// bound to the registry's host.
func (s *Service) registryLogin(ctx context.Context, c Caller, req ImportTemplateRequest) (user, pass string, err error) {
	if s.box == nil {
		return "", "", fmt.Errorf("%w: credentials: this server has no master key, so it keeps no secrets", ErrInvalid)
	}
	sec, err := s.st.GetSecret(ctx, c.TenantID, req.Credentials)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", fmt.Errorf("%w: credentials: secret %s", ErrNotFound, clip(req.Credentials))
	}
	if err != nil {
		return "", "", fmt.Errorf("load secret %s: %w", req.Credentials, err)
	}
	host, _, _ := strings.Cut(registryHost(req.Image), ":")
	if !hostListed(sec.Hosts, host) {
		return "", "", fmt.Errorf("%w: credentials: secret %s is not bound to %s (its hosts: %s)", ErrInvalid, req.Credentials, host, strings.Join(sec.Hosts, ", "))
	}
	v, err := s.box.Open(sec.Sealed, secretAD(c.TenantID, req.Credentials))
	if err != nil {
		return "", "", fmt.Errorf("secret %s: %w", req.Credentials, err)
	}
	if u, p, ok := strings.Cut(string(v), ":"); ok {
		return u, p, nil
	}
	return "", string(v), nil
}

// hostListed says whether host is one of a secret's hosts (an exact name
// or a "*.domain" wildcard).
func hostListed(hosts []string, host string) bool {
	for _, h := range hosts {
		h = strings.ToLower(h)
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
			return true
		}
	}
	return false
}
