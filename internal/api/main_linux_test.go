package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/client/clienttest/suite"
	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxtest"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// One runtime and one store for the package's Linux tests: a Service
// reclaims every runtime sandbox its store does not know, so all of them
// share the store. The runtime is made by the first test that needs it.
var (
	fx      *sandboxtest.Shared
	tenantN atomic.Int64
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "api", func(s *sandboxtest.Shared) { fx = s })
}

// startLinux serves the API as airlock serve does, over a Service on the
// Linux runtime, to an admin key of a tenant of its own; every answer is
// checked against openapi.json. Without root, namespaces and cgroups the
// test skips (in CI it fails: linuxtest.Require).
func startLinux(t *testing.T) suite.Server {
	t.Helper()
	rt := fx.Runtime(t)
	ctx := context.Background()
	// As serve runs it: with the egress proxy and a master key.
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.NewManager(ctx, fx.Store, rt, sandbox.Options{Egress: &egress.Config{}, Secrets: box, DataDir: fx.StateDir()})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	t.Cleanup(func() { svc.Close() })
	n := tenantN.Add(1)
	ten := tenancy.Tenant{ID: fmt.Sprintf("t-suite-%d", n), Name: fmt.Sprintf("suite-%d", n)}
	if err := fx.Store.CreateTenant(ctx, ten); err != nil {
		t.Fatal(err)
	}
	key, hash := api.NewKey()
	if err := fx.Store.CreateKey(ctx, tenancy.Key{ID: "k-" + ten.ID, TenantID: ten.ID, Name: "admin", Hash: hash, Admin: true}); err != nil {
		t.Fatal(err)
	}
	h := api.New(svc, fx.Store, api.Options{AgentProtocol: agent.ProtocolVersion, DataDir: fx.StateDir(), AuditSigner: box.Signer(),
		Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(api.CheckedHandler(t, h))
	t.Cleanup(srv.Close)
	return suite.Server{URL: srv.URL, AdminKey: key}
}
