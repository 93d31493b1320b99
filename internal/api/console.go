package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// The browser console signs in with an API key once and then holds only a
// session cookie: HttpOnly (no script reads it), SameSite=Strict (no other
// site's page sends it), stored server-side by hash so signing out or
// deleting the key ends it at once.
const (
	// SessionCookie is the console session cookie's name.
	SessionCookie = "airlock_session"
	// SessionPrefix starts a console session's cookie value.
	SessionPrefix = tenancy.SessionPrefix
	// CSRFHeader must be on every cookie-authenticated request that is not
	// a GET or HEAD. A page of another origin cannot add it without a CORS
	// preflight, which this server never grants.
	CSRFHeader = "X-Airlock-CSRF"
	// consoleSessionTTL is how long a sign-in lasts.
	consoleSessionTTL = tenancy.ConsoleSessionTTL
)

// consoleSession is the answer of the session routes.
type consoleSession struct {
	TenantID  string    `json:"tenant_id"`
	Tenant    string    `json:"tenant"`
	KeyID     string    `json:"key_id"`
	Admin     bool      `json:"admin"`
	ExpiresAt time.Time `json:"expires_at"`
}

// createConsoleSession exchanges an API key for a session cookie.
func (s *server) createConsoleSession(w http.ResponseWriter, r *http.Request) {
	if err := checkBrowserRequest(r); err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Key string `json:"key"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	key := strings.TrimSpace(req.Key)
	switch {
	case key == "":
		s.fail(w, r, invalidf("field \"key\" is empty: sign in with an API key (alk_...)"))
		return
	case strings.HasPrefix(key, TokenPrefix):
		s.fail(w, r, invalidf("a sandbox token cannot sign in to the console: use an API key (alk_...)"))
		return
	}
	plain, cs, err := s.tenancy.CreateConsoleSession(r.Context(), key)
	if err != nil {
		s.fail(w, r, credentialError(err))
		return
	}
	out, err := s.sessionInfo(r, cs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: plain, Path: "/", Expires: cs.ExpiresAt,
		MaxAge: int(consoleSessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secureRequest(r)})
	writeJSON(w, http.StatusOK, out)
}

// getConsoleSession says who the cookie signs in as: 401 if nobody.
func (s *server) getConsoleSession(w http.ResponseWriter, r *http.Request) {
	if err := checkBrowserRequest(r); err != nil {
		s.fail(w, r, err)
		return
	}
	cs, ok, err := s.consoleSession(r)
	if err == nil && !ok {
		err = errf(http.StatusUnauthorized, codeUnauthenticated, "not signed in")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.sessionInfo(r, cs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteConsoleSession signs out: the session ends server-side, so the
// old cookie stops working even if a copy of it survives.
func (s *server) deleteConsoleSession(w http.ResponseWriter, r *http.Request) {
	if err := checkBrowserRequest(r); err != nil {
		s.fail(w, r, err)
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		if err := s.tenancy.DeleteConsoleSession(r.Context(), c.Value); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secureRequest(r)})
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) sessionInfo(r *http.Request, cs tenancy.Session) (consoleSession, error) {
	p := cs.Principal
	t, err := s.tenancy.GetTenant(r.Context(), p.TenantID)
	if err != nil {
		return consoleSession{}, err
	}
	return consoleSession{TenantID: p.TenantID, Tenant: t.Name, KeyID: p.KeyID, Admin: p.Admin, ExpiresAt: cs.ExpiresAt}, nil
}

// consoleSession returns the live session of the request's cookie; a
// request without the cookie gets ok false and no error.
func (s *server) consoleSession(r *http.Request) (cs tenancy.Session, ok bool, err error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return tenancy.Session{}, false, nil
	}
	if cs, err = s.tenancy.ConsoleSession(r.Context(), c.Value); err != nil {
		return tenancy.Session{}, false, credentialError(err)
	}
	return cs, true, nil
}

var errBadSession = errf(http.StatusUnauthorized, codeUnauthenticated,
	"console session ended (signed out, expired, or its key was deleted): sign in again")

// cookieCaller authenticates a request by its console session cookie.
func (s *server) cookieCaller(r *http.Request) (sandbox.Caller, error) {
	cs, ok, err := s.consoleSession(r)
	if err != nil {
		return sandbox.Caller{}, err
	}
	if !ok {
		return sandbox.Caller{}, errNoCredential
	}
	if err := checkBrowserRequest(r); err != nil {
		return sandbox.Caller{}, err
	}
	return callerOfPrincipal(cs.Principal), nil
}

// checkBrowserRequest refuses what a page of another origin could make a
// browser send with the cookie: a request whose Origin is not this
// server's, and a state-changing request without the CSRF header (which a
// cross-origin page cannot add). WebSocket upgrades and EventSource are
// GETs; the Origin check covers them, as browsers always send Origin on a
// WebSocket handshake.
func checkBrowserRequest(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || !strings.EqualFold(u.Host, r.Host) {
			return errf(http.StatusForbidden, codeForbidden, "cross-origin request refused: Origin %q is not this server", o)
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(CSRFHeader) == "" {
		return errf(http.StatusForbidden, codeForbidden, "missing %s header: the console sends it on every change", CSRFHeader)
	}
	return nil
}

// secureRequest reports whether the browser reached this server over
// HTTPS, directly or through a TLS-terminating proxy: the cookie is then
// marked Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
