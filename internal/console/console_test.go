package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestHandler(t *testing.T) {
	built := newHandler(fstest.MapFS{
		"index.html":    {Data: []byte("<!doctype html><title>Airlock</title>")},
		"app.js":        {Data: []byte("console.log(1)")},
		"fonts/a.woff2": {Data: []byte("font")},
	})
	for _, tc := range []struct {
		method, path string
		match        bool
		status       int
		body         string
	}{
		{"GET", "/", true, 200, "<title>Airlock</title>"},
		{"GET", "/sandboxes", true, 200, "<title>Airlock</title>"},
		{"GET", "/sandboxes/sbx_1/terminal", true, 200, "<title>Airlock</title>"},
		{"GET", "/signin", true, 200, "<title>Airlock</title>"},
		{"HEAD", "/usage", true, 200, ""},
		{"GET", "/app.js", true, 200, "console.log(1)"},
		{"GET", "/fonts/a.woff2", true, 200, "font"},
		// Not the console's: the API answers these with its JSON errors.
		{"POST", "/", false, 0, ""},
		{"GET", "/v1/sandboxes", false, 0, ""},
		{"GET", "/healthz", false, 0, ""},
		{"GET", "/nope.js", false, 0, ""},
		{"GET", "/fonts", false, 0, ""},
		{"DELETE", "/sandboxes", false, 0, ""},
		{"GET", "/../app.js", true, 400, "invalid URL path"}, // never outside the build
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if got := built.Match(r); got != tc.match {
			t.Errorf("%s %s: Match = %v, want %v", tc.method, tc.path, got, tc.match)
			continue
		}
		if !tc.match {
			continue
		}
		w := httptest.NewRecorder()
		built.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, w.Code, w.Body.String(), tc.status, tc.body)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
	}

	bare := newHandler(fstest.MapFS{".gitkeep": {}})
	if bare.Built() {
		t.Fatal("a build without index.html says it is built")
	}
	w := httptest.NewRecorder()
	bare.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "npm run build --prefix web") {
		t.Fatalf("unbuilt console: %d %s", w.Code, w.Body)
	}
	if bare.Match(httptest.NewRequest("GET", "/.gitkeep", nil)) {
		t.Fatal("hidden files are served")
	}
}
