package images

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// basicAuth guards h with one username and password.
func basicAuth(user, pass string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// bearerAuth guards h with one registry token.
func bearerAuth(token string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

func TestImportCredentials(t *testing.T) {
	img := imageOf(t, layerOf(t, false, fileE("secret", "only for alice\n", 0o644)))
	basicHost := startRegistry(t, basicAuth("alice", "s3cret"))
	basicRef := push(t, basicHost, "private", img, &authn.Basic{Username: "alice", Password: "s3cret"})
	tokenHost := startRegistry(t, bearerAuth("tok3n"))
	tokenRef := push(t, tokenHost, "private", img, &authn.Bearer{Token: "tok3n"})

	tests := []struct {
		name, ref, user, pass string
		wantUnauthorized      bool
	}{
		{"basic, anonymous", basicRef, "", "", true},
		{"basic, wrong password", basicRef, "alice", "guess", true},
		{"basic, right password", basicRef, "alice", "s3cret", false},
		{"token, anonymous", tokenRef, "", "", true},
		{"token, wrong token", tokenRef, "", "guess", true},
		{"token, right token", tokenRef, "", "tok3n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newDst(t)
			src := registrySource(t, tt.ref)
			src.Username, src.Password = tt.user, tt.pass
			_, err := Import(context.Background(), src, dst, nil)
			if !tt.wantUnauthorized {
				if err != nil {
					t.Fatalf("Import with credentials: %v", err)
				}
				return
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, errdefs.ErrUnauthenticated) {
				t.Fatalf("Import: %v, want ErrUnauthorized", err)
			}
			mustNotExist(t, dst)
		})
	}
}
