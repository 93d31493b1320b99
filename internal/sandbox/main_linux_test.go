package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxtest"
	"github.com/airlockhq/airlock/internal/store"
)

// One runtime and one store for the package: the base template and disk
// pool are set up once, and since a Service reclaims every runtime sandbox
// its store does not know, all Services must share the store.
var (
	fx      *sandboxtest.Shared
	shared  store.Store
	tenantN atomic.Int64
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "sandbox", func(s *sandboxtest.Shared) { fx, shared = s, s.Store })
}

func testRuntime(t *testing.T) *linux.Runtime { return fx.Runtime(t) }

// newService starts a Service on the shared runtime and store, closed when
// the test ends.
func newService(t *testing.T) *sandbox.Service {
	t.Helper()
	svc, err := sandbox.NewManager(context.Background(), shared, testRuntime(t), sandbox.Options{})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// tenant adds a fresh tenant and returns a caller with a key of it.
func tenant(t *testing.T, maxSandboxes int, maxMemoryMB int64) sandbox.Caller {
	t.Helper()
	return addTenant(t, shared, fmt.Sprint("tenant", tenantN.Add(1)), maxSandboxes, maxMemoryMB)
}

// create makes a sandbox that is deleted when the test ends.
func create(t *testing.T, svc *sandbox.Service, c sandbox.Caller, req sandbox.CreateRequest) sandboxrec.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := svc.Create(ctx, c, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		if err := svc.Delete(context.Background(), c, sb.ID); err != nil {
			t.Errorf("delete %s: %v", sb.ID, err)
		}
	})
	return sb
}

// run execs a shell script and fails the test on an error (not on a
// non-zero exit: callers check the result).
func run(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id, script string) sandbox.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := svc.Exec(ctx, c, id, sandbox.ExecRequest{Command: script})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return res
}

func runtimeHas(t *testing.T, id string) bool {
	t.Helper()
	ids, err := testRuntime(t).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(ids, id)
}

func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: got %v, want %v", what, err, kind)
	}
}
