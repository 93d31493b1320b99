// Package console serves the browser console: a single-page app whose
// assets the front-end build (web/, npm run build) writes to dist and the
// Go build embeds. The app calls only the public API, with the session
// cookie the API hands out at POST /v1/console/session; this package has
// no data of its own.
//
// Without the front-end build the binary still compiles: the console then
// answers with a page that says how to build it.
package console

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// routes are the app's own pages, first path segment: a reload or a link
// to one of them gets index.html and the app routes it.
var routes = map[string]bool{"signin": true, "sandboxes": true, "snapshots": true, "volumes": true, "templates": true, "secrets": true, "usage": true, "admin": true, "approvals": true}

// others are the paths the rest of the server answers (the API with its
// health check and Prometheus scrape, MCP, the E2B facade), each with
// what lies under it. The console never takes them, even from a browser.
var others = []string{"/v1", "/healthz", "/metrics", "/mcp", "/e2b"}

// otherPart reports whether p is one of others or under one.
func otherPart(p string) bool {
	for _, o := range others {
		if p == o || strings.HasPrefix(p, o+"/") {
			return true
		}
	}
	return false
}

// wantsPage reports whether r is a browser loading a page (its Accept
// names HTML), not a program that expects the API's JSON errors.
func wantsPage(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// Handler serves the console. Match says which requests are its own.
type Handler struct {
	files fs.FS
	index []byte // nil when the front end is not built
	built time.Time
}

// New returns the console's handler over the embedded build.
func New() *Handler {
	sub, _ := fs.Sub(dist, "dist") // cannot fail: dist is a literal directory
	return newHandler(sub)
}

func newHandler(files fs.FS) *Handler {
	h := &Handler{files: files, built: time.Now()}
	if b, err := fs.ReadFile(files, "index.html"); err == nil {
		h.index = b
	}
	return h
}

// Built reports whether the front end was built into the binary.
func (h *Handler) Built() bool { return h.index != nil }

// Match reports whether a request is the console's: GET or HEAD of /, of
// one of the app's pages, of a built asset, or, from a browser (Accept
// names HTML), of any path the rest of the server does not own, which gets
// the app's own "nothing here" page. Everything else (the API, MCP, E2B,
// other methods, unknown paths asked for by programs) is not, so the API
// keeps answering those with its JSON errors.
func (h *Handler) Match(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	switch {
	case p == "/" || p == "/index.html" || h.page(p):
		return true
	case otherPart(p):
		return false // theirs, without a look into the build
	}
	return h.asset(p) != "" || (wantsPage(r) && h.index != nil)
}

// page reports whether p is one of the app's pages.
func (h *Handler) page(p string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return routes[first]
}

// asset is the file name in the build for path p, or "".
func (h *Handler) asset(p string) string {
	name := strings.TrimPrefix(path.Clean(p), "/")
	if name == "" || name == "." || strings.HasPrefix(name, ".") || name == "index.html" {
		return ""
	}
	if st, err := fs.Stat(h.files, name); err != nil || st.IsDir() {
		return ""
	}
	return name
}

// ServeHTTP serves an asset, or index.html for the app's pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	// The app loads only its own scripts and styles and talks only to this
	// origin; nothing may frame it. xterm.js and the player set inline
	// styles, and the player compiles a WebAssembly terminal.
	hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; "+
		"style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "+
		"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	if name := h.asset(r.URL.Path); name != "" {
		// Asset names are stable across builds (app.js), so revalidate.
		hdr.Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, h.files, name)
		return
	}
	hdr.Set("Cache-Control", "no-store")
	if h.index == nil {
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(notBuilt)
		return
	}
	if p := r.URL.Path; p != "/" && p != "/index.html" && !h.page(p) {
		// A path the console does not know: the app shows its "nothing
		// here" page, and the status says so too.
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			w.Write(h.index)
		}
		return
	}
	http.ServeContent(w, r, "index.html", h.built, bytes.NewReader(h.index))
}

// notBuilt is the page of a binary built without the front end.
var notBuilt = []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Airlock console</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}
code{background:rgba(127,127,127,.15);padding:.1rem .3rem;border-radius:4px}</style></head>
<body><h1>The console is not built into this binary</h1>
<p>This <code>airlock</code> was compiled without the console's front end. The API works as usual
under <code>/v1</code>. To include the console, build the front end, then the binary, from the
repository's root:</p>
<pre><code>npm ci --prefix web &amp;&amp; npm run build --prefix web
CGO_ENABLED=0 go build -o airlock ./cmd/airlock</code></pre>
</body></html>
`)
