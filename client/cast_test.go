package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlockhq/airlock/client"
)

func TestCasts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawPath == "/v1/sandboxes/sb_1/sessions/ses%2F1/cast" || r.URL.Path == "/v1/sandboxes/sb_1/audit/cast" && r.URL.Query().Get("exec") != "ex-2" {
			w.Header().Set("Content-Type", "application/x-asciicast")
			io.WriteString(w, r.URL.RequestURI())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"exec \"ex-2\" is not in the audit log"}}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "alk_test")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		get  func() (io.ReadCloser, error)
		want string
	}{
		{"session", func() (io.ReadCloser, error) { return c.SessionCast(ctx, "sb_1", "ses/1") }, "/v1/sandboxes/sb_1/sessions/ses%2F1/cast"},
		{"exec", func() (io.ReadCloser, error) { return c.AuditCast(ctx, "sb_1", "ex-1") }, "/v1/sandboxes/sb_1/audit/cast?exec=ex-1"},
		{"sandbox", func() (io.ReadCloser, error) { return c.AuditCast(ctx, "sb_1", "") }, "/v1/sandboxes/sb_1/audit/cast"},
	} {
		rc, err := tc.get()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: requested %q (%v), want %q", tc.name, b, err, tc.want)
		}
	}
	rc, err := c.AuditCast(ctx, "sb_1", "ex-2")
	if !errors.Is(err, client.ErrNotFound) || rc != nil {
		t.Errorf("AuditCast of an unknown exec: %v, %v; want ErrNotFound", rc, err)
	}
}
