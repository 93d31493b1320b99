package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// portProxy is ANY /v1/sandboxes/{id}/ports/{port}/...: an HTTP reverse
// proxy to a port the sandbox listens on, so a web app or API server run
// in a sandbox can be reached from outside it without giving it any
// network. The path after the port, the query and the body go to the
// sandbox's server as they are (WebSocket upgrades too); the caller's
// Authorization header and console session cookie never do.
func (s *server) portProxy(w http.ResponseWriter, r *http.Request) {
	id, portText := r.PathValue("id"), r.PathValue("port")
	port, err := strconv.Atoi(portText)
	if err != nil || strconv.Itoa(port) != portText {
		s.fail(w, r, invalidf("port %q: want a number from 1 to 65535", portText))
		return
	}
	c := callerOf(r)
	// The first connection is made here, so that a sandbox that is not the
	// caller's, or a port nothing listens on, gets the API's own error.
	first, err := s.m.DialPort(r.Context(), c, id, port)
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			err = errf(http.StatusBadGateway, codeUnavailable, "%v", err)
		}
		s.fail(w, r, err)
		return
	}
	prefix := "/v1/sandboxes/" + id + "/ports/" + portText
	var mu sync.Mutex
	take := func() net.Conn {
		mu.Lock()
		defer mu.Unlock()
		conn := first
		first = nil
		return conn
	}
	tr := &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if conn := take(); conn != nil {
				return conn, nil
			}
			return s.m.DialPort(ctx, c, id, port)
		},
	}
	defer func() {
		if conn := take(); conn != nil {
			conn.Close()
		}
		tr.CloseIdleConnections()
	}()
	host := "localhost:" + portText
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", host, host
			pr.Out.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
			pr.Out.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
			pr.Out.Header.Del("Authorization")
			dropCookie(pr.Out, SessionCookie)
		},
		Transport:     tr,
		FlushInterval: -1, // server-sent events and other streams as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.fail(w, r, errf(http.StatusBadGateway, codeUnavailable, "sandbox %s port %d: %v", id, port, err))
		},
	}
	rp.ServeHTTP(w, r)
}

// dropCookie removes the cookie named name from the request's Cookie
// headers and keeps the others.
func dropCookie(r *http.Request, name string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, ck := range cookies {
		if ck.Name != name {
			r.AddCookie(ck)
		}
	}
}
