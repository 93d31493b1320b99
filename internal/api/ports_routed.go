package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// PortRequest is a request for a sandbox's port that a front routed by
// other means than the /v1 path: the E2B facade, by host name
// (PORT-ID.DOMAIN) or by its E2b-Sandbox-Id and E2b-Sandbox-Port headers.
type PortRequest struct {
	Sandbox string
	Port    int
	// Path and RawPath are what the sandbox's server is asked for.
	Path, RawPath string
	// Open decides for a request that carries no Airlock credential, from
	// the metadata the sandbox was created with: nil lets it through with
	// the rights of the sandbox's own token; an error refuses it, with
	// the status its PortStatus() int method says (else 403).
	Open func(r *http.Request, metadata map[string]string) error
	// Fail writes an error answer in the front's own shape.
	Fail func(w http.ResponseWriter, r *http.Request, status int, msg string)
	// Drop names request headers never forwarded into the sandbox (the
	// front's own credentials), beyond Authorization and the console's
	// session cookie, which never are.
	Drop []string
}

// portRefusal is an error of PortRequest.Open that says its status.
type portRefusal interface {
	error
	PortStatus() int
}

// sandboxRecords finds a sandbox by id alone, whichever tenant's it is:
// the one lookup that no caller scopes, because a routed request names a
// sandbox before anyone is known to own it. ServePort uses it only to
// learn the sandbox's tenant and metadata; every connection is then made
// by the sandbox layer as a caller of that sandbox, which checks it again.
type sandboxRecords interface {
	GetSandbox(ctx context.Context, id string) (sandboxrec.Sandbox, error)
}

// ServePort serves r, which a front routed to port p.Port of sandbox
// p.Sandbox, through the same proxy as /v1/sandboxes/{id}/ports/{port}/.
// Who reaches the port:
//   - a request p.Open lets through, with the rights of the sandbox's
//     own token (its port and nothing else of the API);
//   - else a request whose Authorization carries an API key of the
//     sandbox's tenant, or the sandbox's own token: the /v1 route's rule;
//   - nobody else: p.Open's refusal without a credential, 401 for a bad
//     one, 404 for a credential of another tenant or sandbox.
//
// A sandbox that does not exist or has ended is 404 to everyone. Calls
// are not recorded in the sandbox's audit log as /v1 calls are (traffic
// open to anyone would fill it); each connection into the port is
// counted and logged as every port connection is.
func (h *Handler) ServePort(w http.ResponseWriter, r *http.Request, p PortRequest) {
	s := h.s
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		status, _, msg := statusOf(err)
		switch {
		case status == http.StatusBadGateway:
			// Nothing listens, or the sandbox's server failed: the
			// sandbox's business, and anyone may ask a public port.
			s.log.Debug("port request failed", "method", r.Method, "sandbox", p.Sandbox, "port", p.Port, "status", status, "err", err)
		case status >= 500:
			s.log.Error("port request failed", "method", r.Method, "sandbox", p.Sandbox, "port", p.Port, "status", status, "err", err)
		}
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			return // the client went away
		}
		p.Fail(w, r, status, msg)
	}
	rec, err := s.records.GetSandbox(r.Context(), p.Sandbox)
	if errors.Is(err, store.ErrNotFound) || err == nil && (rec.State == sandboxrec.Stopped || rec.State == sandboxrec.Failed) {
		err = errf(http.StatusNotFound, codeNotFound, "sandbox %q not found", p.Sandbox)
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	c, err := s.portCaller(r, rec, p.Open)
	if err != nil {
		fail(w, r, err)
		return
	}
	s.proxyPort(w, r, portTarget{caller: c, id: rec.ID, port: p.Port, path: p.Path, rawPath: p.RawPath, drop: p.Drop}, fail)
}

// portCaller is who a routed port request is made as (see ServePort).
func (s *server) portCaller(r *http.Request, rec sandboxrec.Sandbox, open func(*http.Request, map[string]string) error) (sandbox.Caller, error) {
	refused := open(r, rec.Metadata)
	if refused == nil {
		return sandbox.Caller{TenantID: rec.TenantID, SandboxID: rec.ID}, nil
	}
	// Only the Authorization header: a browser sends the console's cookie
	// to the console's own host alone, never to a sandbox's host name.
	if r.Header.Get("Authorization") == "" {
		status := http.StatusForbidden
		var pr portRefusal
		if errors.As(refused, &pr) {
			status = pr.PortStatus()
		}
		code := codeForbidden
		if status == http.StatusUnauthorized {
			code = codeUnauthenticated
		}
		return sandbox.Caller{}, errf(status, code, "%v", refused)
	}
	c, err := s.authenticate(r)
	if err != nil {
		return c, err
	}
	if c.TenantID != rec.TenantID || c.SandboxID != "" && c.SandboxID != rec.ID {
		return sandbox.Caller{}, errf(http.StatusNotFound, codeNotFound, "sandbox %q not found", rec.ID)
	}
	return c, nil
}
