package api_test

import (
	"net/http"
	"testing"

	"github.com/airlockhq/airlock/client/clienttest"
	"github.com/airlockhq/airlock/client/clienttest/suite"
	"github.com/airlockhq/airlock/internal/api"
)

// TestClientSuite runs the Go client's shared suite against the fake
// (clienttest) and against this package's server on the Linux runtime,
// every answer of both checked against openapi.json: where the fake
// answers what the real server does not, or what the document does not
// describe, a test fails.
func TestClientSuite(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		suite.Run(t, func(t *testing.T) suite.Server {
			srv := clienttest.NewServerWith(t, func(h http.Handler) http.Handler { return api.CheckedHandler(t, h) })
			srv.SetExec(suite.Shell)
			return suite.Server{URL: srv.URL, AdminKey: srv.AdminKey}
		})
	})
	t.Run("linux", func(t *testing.T) { suite.Run(t, startLinux) })
}
