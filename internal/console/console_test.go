package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// page is the Accept header of a browser loading a page.
const page = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

type handlerCase struct {
	method, path string
	accept       string
	match        bool
	status       int
	body         string
}

func builtHandler() *Handler {
	return newHandler(fstest.MapFS{
		"index.html":    {Data: []byte("<!doctype html><title>Airlock</title>")},
		"app.js":        {Data: []byte("console.log(1)")},
		"fonts/a.woff2": {Data: []byte("font")},
	})
}

// check runs each case through Match and, where it matches, ServeHTTP.
func check(t *testing.T, h *Handler, cases []handlerCase) {
	t.Helper()
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := h.Match(r); got != tc.match {
			t.Errorf("%s %s (Accept %q): Match = %v, want %v", tc.method, tc.path, tc.accept, got, tc.match)
			continue
		}
		if !tc.match {
			continue
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, w.Code, w.Body.String(), tc.status, tc.body)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
	}
}

func TestHandler(t *testing.T) {
	check(t, builtHandler(), []handlerCase{
		{"GET", "/", "", true, 200, "<title>Airlock</title>"},
		{"GET", "/sandboxes", "", true, 200, "<title>Airlock</title>"},
		{"GET", "/sandboxes/sbx_1/terminal", "", true, 200, "<title>Airlock</title>"},
		{"GET", "/signin", "", true, 200, "<title>Airlock</title>"},
		{"HEAD", "/usage", "", true, 200, ""},
		{"GET", "/approvals", "", true, 200, "<title>Airlock</title>"},
		{"GET", "/app.js", "", true, 200, "console.log(1)"},
		{"GET", "/fonts/a.woff2", "", true, 200, "font"},
		// Not the console's: the API answers these with its JSON errors.
		{"POST", "/", "", false, 0, ""},
		{"GET", "/v1/sandboxes", "", false, 0, ""},
		{"GET", "/healthz", "", false, 0, ""},
		{"GET", "/nope.js", "", false, 0, ""},
		{"GET", "/fonts", "", false, 0, ""},
		{"DELETE", "/sandboxes", "", false, 0, ""},
		{"GET", "/../app.js", "", true, 400, "invalid URL path"}, // never outside the build
	})

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

// TestUnknownPathInBrowserGetsConsoleNotFound: a browser sent to a path
// nobody owns gets the app, which shows its own "nothing here" page, with
// a 404; a program asking for it keeps the API's JSON 404, and the paths
// the rest of the server answers stay theirs.
func TestUnknownPathInBrowserGetsConsoleNotFound(t *testing.T) {
	check(t, builtHandler(), []handlerCase{
		{"GET", "/nothing-here", page, true, 404, "<title>Airlock</title>"},
		{"GET", "/nothing/here/either", page, true, 404, "<title>Airlock</title>"},
		{"HEAD", "/nothing-here", page, true, 404, ""},
		{"GET", "/healthzz", page, true, 404, "<title>Airlock</title>"},
		{"GET", "/sandboxes/sbx_1/nope", page, true, 200, "<title>Airlock</title>"}, // the app's page; it says not found
		{"GET", "/nothing-here", "", false, 0, ""},
		{"GET", "/nothing-here", "application/json", false, 0, ""},
		{"POST", "/nothing-here", page, false, 0, ""},
		{"GET", "/v1/nope", page, false, 0, ""},
		{"GET", "/v1", page, false, 0, ""},
		{"GET", "/healthz", page, false, 0, ""},
		{"GET", "/metrics", page, false, 0, ""},
		{"GET", "/mcp", page, false, 0, ""},
		{"GET", "/e2b/sandboxes", page, false, 0, ""},
	})
	nav := httptest.NewRequest("GET", "/nothing-here", nil)
	nav.Header.Set("Accept", page)
	if newHandler(fstest.MapFS{".gitkeep": {}}).Match(nav) {
		t.Fatal("an unbuilt console takes unknown paths from the API")
	}
}
