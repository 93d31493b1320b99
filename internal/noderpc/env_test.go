package noderpc_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	linuxtest.Cleanup()
	os.Exit(code)
}

// env is a node (the real Linux runtime served over HTTP/2 with TLS, as
// a node serves it) and the control plane's client of it.
type env struct {
	rt  *linux.Runtime
	srv *httptest.Server
	c   *noderpc.Runtime
}

var seq atomic.Int64

func newEnv(t testing.TB) *env {
	t.Helper()
	linuxtest.Require(t)
	rt, err := linux.New(linux.Config{StateDir: linuxtest.StateDir(t), Binary: linuxtest.Init(t)})
	if err != nil {
		t.Fatalf("runtime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	srv := serve(t, rt)
	return &env{rt: rt, srv: srv, c: client(t, srv)}
}

// serve serves rt as a node does: HTTP/2 over TLS.
func serve(t testing.TB, rt runtime.Runtime) *httptest.Server {
	srv := httptest.NewUnstartedServer(noderpc.NewServer(rt))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// client is the server's client, which fails the test if a call ever
// falls back from HTTP/2.
func client(t testing.TB, srv *httptest.Server) *noderpc.Runtime {
	hc := srv.Client()
	hc.Transport = h2Only{t, hc.Transport}
	return noderpc.NewClient(hc, srv.URL)
}

type h2Only struct {
	t  testing.TB
	rt http.RoundTripper
}

func (h h2Only) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err == nil && resp.ProtoMajor != 2 {
		h.t.Errorf("%s %s went over %s, not HTTP/2", r.Method, r.URL.Path, resp.Proto)
	}
	return resp, err
}

// create makes a sandbox through c, destroyed (through the node's own
// runtime, which outlives a server a test closes) when the test ends.
func (e *env) create(t testing.TB, c runtime.Runtime, spec runtime.Spec) runtime.Sandbox {
	t.Helper()
	if spec.ID == "" {
		spec.ID = newID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := c.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	t.Cleanup(func() {
		local, err := e.rt.Get(context.Background(), spec.ID)
		if err == nil {
			err = local.Destroy(context.Background())
		}
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Errorf("destroy sandbox %s: %v", spec.ID, err)
		}
	})
	return sb
}

func newID() string { return fmt.Sprintf("nrpc-%d-%d", os.Getpid(), seq.Add(1)) }

// local is the node's own handle of sandbox sb.
func (e *env) local(t testing.TB, sb runtime.Sandbox) runtime.Sandbox {
	t.Helper()
	l, err := e.rt.Get(context.Background(), sb.ID())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type result struct {
	stdout, stderr string
	st             runtime.ExitStatus
}

func run(t *testing.T, sb runtime.Sandbox, req runtime.ExecRequest) result {
	t.Helper()
	out, errs, st := linuxtest.Exec(t, sb, req)
	return result{out, errs, st}
}

func mustSh(t *testing.T, sb runtime.Sandbox, script string) string {
	t.Helper()
	return linuxtest.MustSh(t, sb, script)
}

// lockedBuf collects output for a test to poll.
type lockedBuf = linuxtest.Buffer

// waitFor polls cond until it holds; the bound is generous, this checks
// behaviour, not speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// checkGoroutines fails t unless the goroutine count comes back to at
// most base plus a little slack (runtime helpers that come and go).
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	const slack = 4
	n := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n = goruntime.NumGoroutine(); n <= base+slack {
			return
		}
	}
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	t.Errorf("%d goroutines, %d before: leaked\n%s", n, base, b.String())
}
