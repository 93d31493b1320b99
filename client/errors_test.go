package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestErrorDecoding(t *testing.T) {
	kinds := []error{ErrInvalid, ErrUnauthenticated, ErrForbidden, ErrNotFound, ErrConflict, ErrLimitExceeded, ErrUnavailable}
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		wantKind    error // nil: none of kinds
		wantMsg     string
	}{
		{"api not_found", 404, "application/json", `{"error":{"code":"not_found","message":"sandbox sb-1 not found"}}`, ErrNotFound, "sandbox sb-1 not found"},
		{"api 413 is invalid", 413, "application/json", `{"error":{"code":"invalid_argument","message":"too big"}}`, ErrInvalid, "too big"},
		{"api quota", 429, "application/json", `{"error":{"code":"limit_exceeded","message":"tenant acme has 3 sandboxes"}}`, ErrLimitExceeded, "tenant acme has 3 sandboxes"},
		{"api storage quota is a limit", 429, "application/json", `{"error":{"code":"storage_quota","message":"tenant acme keeps 2.0 GiB"}}`, ErrLimitExceeded, "tenant acme keeps 2.0 GiB"},
		{"api low disk is unavailable", 503, "application/json", `{"error":{"code":"low_disk","message":"the data dir /d has 1 GiB free"}}`, ErrUnavailable, "the data dir /d has 1 GiB free"},
		{"api forbidden", 403, "application/json", `{"error":{"code":"forbidden","message":"admin only"}}`, ErrForbidden, "admin only"},
		{"api code wins over status", 400, "application/json", `{"error":{"code":"conflict","message":"x"}}`, ErrConflict, "x"},
		{"api internal has no kind", 500, "application/json", `{"error":{"code":"internal","message":"internal error"}}`, nil, "internal error"},
		{"proxy page", 502, "text/html", "<html>Bad Gateway</html>\n", ErrUnavailable, "<html>Bad Gateway</html>"},
		{"empty 401", 401, "", "", ErrUnauthenticated, "401 Unauthorized"},
		{"json without code", 404, "application/json", `{"message":"nope"}`, ErrNotFound, `{"message":"nope"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := New(srv.URL, "k").GetSandbox(context.Background(), "sb-1")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T); want *Error", err, err)
			}
			if e.Status != tc.status || e.Error() != tc.wantMsg {
				t.Errorf("err = status %d %q; want %d %q", e.Status, e.Error(), tc.status, tc.wantMsg)
			}
			for _, k := range kinds {
				if got := errors.Is(err, k); got != (k == tc.wantKind) {
					t.Errorf("errors.Is(err, %v) = %v", k, got)
				}
			}
		})
	}
}

func TestAuthorizationHeader(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
	}))
	defer srv.Close()
	if err := New(srv.URL, "alk_x").Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got != "Bearer alk_x" {
		t.Errorf("Authorization = %q", got)
	}
}

// An id is one path segment: it cannot reach another route.
func TestIDIsEscaped(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		w.WriteHeader(204)
	}))
	defer srv.Close()
	if err := New(srv.URL, "k").DeleteSandbox(context.Background(), "../tenants"); err != nil {
		t.Fatal(err)
	}
	if got != "/v1/sandboxes/..%2Ftenants" {
		t.Errorf("path = %q", got)
	}
}
