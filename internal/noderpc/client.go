package noderpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Runtime is a node's runtime, reached through its node API.
type Runtime struct {
	hc   *http.Client
	base string
	host string // for messages
}

var (
	_ runtime.Runtime   = (*Runtime)(nil)
	_ runtime.Templater = (*Runtime)(nil)
)

// NewClient returns the runtime of the node at baseURL
// ("https://127.0.0.1:7071"), called through hc: set up for the node's
// mutual TLS and HTTP/2, and without a Timeout, which would cut the
// streams that last as long as a process or a connection.
func NewClient(hc *http.Client, baseURL string) *Runtime {
	base := strings.TrimRight(baseURL, "/")
	host := base
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		host = u.Host
	}
	return &Runtime{hc: hc, base: base, host: host}
}

// do sends a request and returns a 2xx response; anything else is the
// node's error, or the node could not be reached.
func (c *Runtime) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+prefix+path, body)
	if err != nil {
		return nil, fmt.Errorf("%w: node %s: %s %s: %v", runtime.ErrInvalid, c.host, method, path, err)
	}
	req.Header.Set(ProtocolHeader, strconv.Itoa(Protocol))
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.unreachable(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON))
	if err != nil {
		return nil, c.unreachable(ctx, err)
	}
	var we wireError
	if json.Unmarshal(b, &we) != nil || we.Message == "" {
		// Not the node API's answer: a proxy's, or a server that is not
		// a node.
		return nil, fmt.Errorf("%w: node %s answered %s: %.200q", runtime.ErrUnavailable, c.host, resp.Status, b)
	}
	err = we.err()
	if resp.StatusCode == http.StatusNotFound && errors.Is(err, runtime.ErrUnsupported) {
		// The node's answer to a route it does not have: older than
		// this client.
		re := err.(*remoteError)
		re.errs = append(re.errs, errNoRoute)
	}
	return nil, err
}

// unreachable is how a failed exchange with the node is reported: the
// caller's own cancellation as such, anything else as the node's being
// out of reach, which the control plane treats as it treats a lost node.
func (c *Runtime) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("node %s: %w", c.host, ctx.Err())
	}
	return fmt.Errorf("%w: node %s could not be reached: %v", runtime.ErrUnavailable, c.host, err)
}

// call makes a call that returns once: in (if not nil) as JSON, the reply
// decoded into out (if not nil).
func (c *Runtime) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%w: node %s: %s %s: %v", runtime.ErrInvalid, c.host, method, path, err)
		}
		body = bytes.NewReader(b)
	}
	return c.send(ctx, method, path, body, out)
}

// send is call with a raw request body.
func (c *Runtime) send(ctx context.Context, method, path string, body io.Reader, out any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := io.LimitReader(resp.Body, maxReply)
	if out != nil {
		if err := json.NewDecoder(r).Decode(out); err != nil {
			return c.unreachable(ctx, fmt.Errorf("read reply: %w", err))
		}
	}
	// What is left (a newline) is read, so an HTTP/1.1 connection can be
	// used again.
	_, _ = io.Copy(io.Discard, r)
	return nil
}

func (c *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	if math.IsNaN(spec.Limits.CPUs) || math.IsInf(spec.Limits.CPUs, 0) {
		// JSON has no such numbers; the runtime would refuse them with
		// this error.
		return nil, spec.Limits.WithDefaults().Validate()
	}
	var r idReply
	if err := c.call(ctx, http.MethodPost, "/sandboxes", spec, &r); err != nil {
		return nil, err
	}
	return &sandbox{rt: c, id: r.ID}, nil
}

func (c *Runtime) Get(ctx context.Context, id string) (runtime.Sandbox, error) {
	seg, err := segment("sandbox", id)
	if err != nil {
		return nil, err
	}
	var r idReply
	if err := c.call(ctx, http.MethodGet, "/sandboxes/"+seg, nil, &r); err != nil {
		return nil, err
	}
	return &sandbox{rt: c, id: r.ID}, nil
}

func (c *Runtime) List(ctx context.Context) ([]string, error) {
	var ids []string
	err := c.call(ctx, http.MethodGet, "/sandboxes", nil, &ids)
	return ids, err
}

// protectionsWait bounds Protections, which has no context.
const protectionsWait = 10 * time.Second

// Protections reports the node's isolation layers; nil when the node
// cannot be asked (the interface has no error to say so).
func (c *Runtime) Protections() []runtime.Protection {
	ctx, cancel := context.WithTimeout(context.Background(), protectionsWait)
	defer cancel()
	var ps []runtime.Protection
	if err := c.call(ctx, http.MethodGet, "/protections", nil, &ps); err != nil {
		return nil
	}
	return ps
}

func (c *Runtime) Templates(ctx context.Context) ([]runtime.TemplateInfo, error) {
	var ts []runtime.TemplateInfo
	err := c.call(ctx, http.MethodGet, "/templates", nil, &ts)
	return ts, err
}

func (c *Runtime) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	seg, err := segment("template", name)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	var t runtime.TemplateInfo
	err = c.call(ctx, http.MethodGet, "/templates/"+seg, nil, &t)
	return t, err
}

func (c *Runtime) CommitTemplate(ctx context.Context, sandboxID string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
	var out runtime.TemplateInfo
	if err := c.call(ctx, http.MethodPost, "/templates", commitArgs{sandboxID, t}, &out); err != nil {
		return t, err
	}
	return out, nil
}

func (c *Runtime) DeleteTemplate(ctx context.Context, name string) error {
	seg, err := segment("template", name)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, "/templates/"+seg, nil, nil)
}

// segment is name as one path segment. "", "." and ".." cannot be one (a
// path holding them is cleaned before it is routed), and no sandbox or
// template is called that: the answer is the runtime's for an unknown
// name.
func segment(kind, name string) (string, error) {
	if name == "" || name == "." || name == ".." {
		return "", fmt.Errorf("%w: %s %q", runtime.ErrNotFound, kind, name)
	}
	return url.PathEscape(name), nil
}
