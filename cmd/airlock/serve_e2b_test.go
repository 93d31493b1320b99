package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlockhq/airlock/internal/e2b"
)

// TestE2BHosts: with a domain, a sandbox's host name goes to the facade
// whatever its path (here envd's health, which answers 204 without a
// token); without one, and for every other host, the request goes on to
// the API, the console and MCP as before.
func TestE2BHosts(t *testing.T) {
	eh := e2b.NewHandler(e2b.Options{APIURL: "http://127.0.0.1:1"})
	t.Cleanup(eh.Close)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
	for _, tc := range []struct {
		domain, host, path string
		want               int
	}{
		{"e2b.test", "49983-sb-1.e2b.test:7070", "/health", 204},
		{"e2b.test", "49983-sb-1.e2b.test", "/v1/sandboxes", 404}, // envd has no such path
		{"e2b.test", "127.0.0.1:7070", "/health", 299},
		{"e2b.test", "e2b.test", "/health", 299},
		{"", "49983-sb-1.e2b.test", "/health", 299},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://"+tc.host+tc.path, nil)
		withE2BHosts(eh, next, tc.domain, context.Background()).ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("domain %q, GET %s%s: %d, want %d", tc.domain, tc.host, tc.path, w.Code, tc.want)
		}
	}
}

func TestCheckE2BDomain(t *testing.T) {
	for in, want := range map[string]string{"": "", "E2B.Example.com.": "e2b.example.com"} {
		d := in
		if err := checkE2BDomain(&d); err != nil || d != want {
			t.Errorf("checkE2BDomain(%q) = %q, %v; want %q", in, d, err, want)
		}
	}
	for _, bad := range []string{"localhost", "https://e2b.test", "*.e2b.test", "e2b.test:443"} {
		d := bad
		if err := checkE2BDomain(&d); err == nil {
			t.Errorf("checkE2BDomain(%q) accepted it", bad)
		}
	}
}
