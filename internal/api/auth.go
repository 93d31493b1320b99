package api

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Credential prefixes: an API key of a tenant, a token of one sandbox.
// They and the functions below are tenancy's, kept here for the callers
// that know them by these names (cmd/airlock, tests of other packages).
const (
	KeyPrefix   = tenancy.KeyPrefix
	TokenPrefix = tenancy.TokenPrefix
)

// NewKey returns a new API key and the hash to store for it.
func NewKey() (plaintext string, hash []byte) { return tenancy.NewKey() }

// NewToken returns a new sandbox token and the hash to store for it.
func NewToken() (plaintext string, hash []byte) { return tenancy.NewToken() }

// HashCredential is the hash under which a key or token is stored and
// looked up: see tenancy.HashCredential.
func HashCredential(s string) []byte { return tenancy.HashCredential(s) }

// access says who may call a route.
type access int

const (
	public         access = iota // no credential
	anyKey                       // an API key; a sandbox token gets 403
	adminKey                     // an admin API key; any other credential gets 403
	sandboxRoute                 // a key, or the token of the sandbox {id}
	sandboxKeyOnly               // a key; a token, even of {id}, gets 403
)

type callerKey struct{}

func callerOf(r *http.Request) sandbox.Caller {
	c, _ := r.Context().Value(callerKey{}).(sandbox.Caller)
	return c
}

// authorize wraps h with the credential check for level a.
func (s *server) authorize(a access, h http.HandlerFunc) http.HandlerFunc {
	if a == public {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.authenticate(r)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.code == codeUnauthenticated {
				w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			}
			s.fail(w, r, err)
			return
		}
		if err := permit(a, c, r); err != nil {
			s.fail(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
		// What the call recorded in audit logs is in the store before the
		// answer starts: an event a client was told of is not lost to a
		// kill -9 of the daemon.
		sw := &statusWriter{ResponseWriter: w, starting: func(int) { s.m.Durable() }}
		if a != sandboxRoute && a != sandboxKeyOnly {
			h(sw, r)
			return
		}
		// A call on a sandbox goes into its audit log, route and status,
		// as its answer starts: in the same write as what the call did (a
		// record made after the answer would cost the next call a write
		// of its own), and before a stream runs. A call whose handler cut
		// the answer off (a panic of http.ErrAbortHandler, which the
		// server recovers) is recorded as it ends.
		start, recorded := time.Now(), false
		record := func(status int) {
			if !recorded {
				recorded = true
				s.m.RecordRequest(r.Context(), c, r.PathValue("id"), r.Method, r.Pattern, status, time.Since(start))
			}
		}
		sw.starting = func(status int) {
			record(status)
			s.m.Durable()
		}
		defer func() { record(sw.status) }()
		h(sw, r)
	}
}

// statusWriter notes the status a handler answered with, and makes the
// audit log durable before any of the answer goes out. It passes on
// flushing and hijacking (SSE, WebSocket) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status   int
	starting func(status int) // called once, before the answer starts
}

// start marks the answer started with code, after starting.
func (w *statusWriter) start(code int) {
	if w.status == 0 {
		if w.starting != nil {
			w.starting(code)
		}
		w.status = code
	}
}

func (w *statusWriter) WriteHeader(code int) {
	w.start(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	w.start(http.StatusOK)
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.start(http.StatusSwitchingProtocols)
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func permit(a access, c sandbox.Caller, r *http.Request) error {
	token := c.SandboxID != ""
	// A token's own sandbox is the only one that exists for it (404 like any
	// sandbox the caller does not own); checked before the route kind so the
	// answer does not tell a token holder which other ids are real.
	if token && (a == sandboxRoute || a == sandboxKeyOnly) && r.PathValue("id") != c.SandboxID {
		return errf(http.StatusNotFound, codeNotFound, "sandbox %q not found", r.PathValue("id"))
	}
	switch {
	case a == adminKey && !c.Admin:
		return errf(http.StatusForbidden, codeForbidden, "this route needs an admin API key")
	case token && a == anyKey:
		return errf(http.StatusForbidden, codeForbidden, "a sandbox token may only use its own sandbox's routes")
	case token && a == sandboxKeyOnly:
		// A token that could mint tokens could outlive its own expiry.
		return errf(http.StatusForbidden, codeForbidden, "a sandbox token cannot mint tokens; use an API key")
	}
	return nil
}

var errNoCredential = errf(http.StatusUnauthorized, codeUnauthenticated,
	"missing credential: send Authorization: Bearer <API key or sandbox token> (or sign in to the console)")

var errBadCredential = errf(http.StatusUnauthorized, codeUnauthenticated,
	"unknown, deleted or expired credential")

// authenticate finds the caller of r by its credential: a bearer key or
// token, else a console session cookie.
func (s *server) authenticate(r *http.Request) (sandbox.Caller, error) {
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if h == "" {
		// The console's browsers: a session cookie instead.
		return s.cookieCaller(r)
	}
	cred = strings.TrimSpace(cred)
	if !ok || !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return sandbox.Caller{}, errf(http.StatusUnauthorized, codeUnauthenticated,
			"malformed Authorization header: want Bearer <credential>")
	}
	p, err := s.tenancy.Authenticate(r.Context(), cred)
	if err != nil {
		return sandbox.Caller{}, credentialError(err)
	}
	return callerOfPrincipal(p), nil
}

func callerOfPrincipal(p tenancy.Principal) sandbox.Caller {
	return sandbox.Caller{TenantID: p.TenantID, KeyID: p.KeyID, Admin: p.Admin, SandboxID: p.SandboxID}
}

// credentialError maps tenancy's credential errors to their 401 answers;
// any other error (the store's) passes on.
func credentialError(err error) error {
	switch {
	case errors.Is(err, tenancy.ErrBadCredential):
		return errBadCredential
	case errors.Is(err, tenancy.ErrBadSession):
		return errBadSession
	}
	return err
}
