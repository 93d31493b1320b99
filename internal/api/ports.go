package api

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	prefix := "/v1/sandboxes/" + id + "/ports/" + portText
	s.proxyPort(w, r, portTarget{caller: callerOf(r), id: id, port: port,
		path: strings.TrimPrefix(r.URL.Path, prefix), rawPath: strings.TrimPrefix(r.URL.RawPath, prefix)}, s.fail)
}

// portTarget is where proxyPort sends a request, and as whom.
type portTarget struct {
	caller sandbox.Caller
	id     string
	port   int
	// path and rawPath are what the sandbox's server is asked for.
	path, rawPath string
	// drop names request headers never forwarded, beyond Authorization
	// and the console's session cookie.
	drop []string
}

// proxyPort is the one reverse proxy into a sandbox's port, for the /v1
// route and for the ports that fronts route by host name (ServePort):
// connections made by the sandbox layer as t.caller, streams flushed as
// they come, protocol upgrades (WebSocket) passed through, and the
// credentials of the caller stripped. Errors go to fail.
func (s *server) proxyPort(w http.ResponseWriter, r *http.Request, t portTarget, fail func(http.ResponseWriter, *http.Request, error)) {
	// The first connection is made here, so that a sandbox that is not the
	// caller's, or a port nothing listens on, gets the API's own error.
	first, err := s.m.DialPort(r.Context(), t.caller, t.id, t.port)
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			err = errf(http.StatusBadGateway, codeUnavailable, "%v", err)
		}
		fail(w, r, err)
		return
	}
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
			return s.m.DialPort(ctx, t.caller, t.id, t.port)
		},
	}
	defer func() {
		if conn := take(); conn != nil {
			conn.Close()
		}
		tr.CloseIdleConnections()
	}()
	host := "localhost:" + strconv.Itoa(t.port)
	if t.path == "" {
		t.path, t.rawPath = "/", ""
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", host, host
			pr.Out.URL.Path, pr.Out.URL.RawPath = t.path, t.rawPath
			pr.Out.Header.Del("Authorization")
			dropCookie(pr.Out, SessionCookie)
			for _, h := range t.drop {
				pr.Out.Header.Del(h)
			}
		},
		Transport:     tr,
		FlushInterval: -1, // server-sent events and other streams as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			fail(w, r, errf(http.StatusBadGateway, codeUnavailable, "sandbox %s port %d: %v", t.id, t.port, err))
		},
	}
	// A small body is read here, before the sandbox's server is asked:
	// read by the transport's own goroutine while a fast answer (the code
	// interpreter's) is already being written, it made the server close
	// the client's keep-alive connection after some answers, and a client
	// that had sent its next request on it (Node's fetch, which does not
	// retry a POST) got "other side closed" (issue 24).
	if r.Body != nil && r.ContentLength > 0 && r.ContentLength <= maxBufferedPortBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			fail(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	rp.ServeHTTP(w, r)
}

// maxBufferedPortBody bounds the request bodies proxyPort reads before
// it forwards them.
const maxBufferedPortBody = 1 << 20

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
