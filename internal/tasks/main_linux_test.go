package tasks_test

import (
	"context"
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
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// One runtime and one store for the package, as in package sandbox: a
// sandbox Service reclaims every runtime sandbox its store does not know.
var (
	fx      *sandboxtest.Shared
	shared  store.Store
	tenantN atomic.Int64
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "tasks", func(s *sandboxtest.Shared) { fx, shared = s, s.Store })
}

func testRuntime(t *testing.T) *linux.Runtime { return fx.Runtime(t) }

// env is a sandbox manager and a task service on the shared runtime, and
// a fresh tenant.
type env struct {
	mgr *sandbox.Service
	svc *tasks.Service
	c   sandbox.Caller
}

func newEnv(t *testing.T, opts tasks.Options) env {
	t.Helper()
	mgr, err := sandbox.NewManager(context.Background(), shared, testRuntime(t), sandbox.Options{})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	t.Cleanup(func() { mgr.Close() })
	name := fmt.Sprint("tenant", tenantN.Add(1))
	if err := shared.CreateTenant(context.Background(), tenancy.Tenant{ID: "t-" + name, Name: name}); err != nil {
		t.Fatal(err)
	}
	svc, err := tasks.New(context.Background(), shared, mgr, opts)
	if err != nil {
		t.Fatalf("new task service: %v", err)
	}
	t.Cleanup(func() { svc.Close() })
	return env{mgr: mgr, svc: svc, c: sandbox.Caller{TenantID: "t-" + name, KeyID: "k-" + name}}
}

func (e env) submit(t *testing.T, req tasks.Request) tasks.Task {
	t.Helper()
	task, err := e.svc.Submit(context.Background(), e.c, req)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return task
}

// wait follows the task's events to task.finished and returns them and
// the task.
func (e env) wait(t *testing.T, id string) (tasks.Task, []tasks.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var evs []tasks.Event
	err := e.svc.Follow(ctx, e.c, id, 0, func() {}, func(ev tasks.Event) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("follow %s: %v", id, err)
	}
	task, err := e.svc.Get(ctx, e.c, id)
	if err != nil {
		t.Fatal(err)
	}
	return task, evs
}

// gone fails the test unless the sandbox is stopped and the runtime has
// no trace of it.
func (e env) gone(t *testing.T, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("the task had no sandbox")
	}
	sb, err := e.mgr.Get(context.Background(), e.c, id)
	if err != nil {
		t.Fatalf("sandbox %s: %v", id, err)
	}
	if sb.State != sandboxrec.Stopped {
		t.Errorf("sandbox %s is %s, want stopped", id, sb.State)
	}
	ids, err := testRuntime(t).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids, id) {
		t.Errorf("sandbox %s is still in the runtime", id)
	}
}
