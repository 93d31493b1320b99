package sandbox_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/placement"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// hopNode is the shared runtime served as a node serves it (the node API
// over HTTP/2 and TLS), the one node of a placement runtime, with every
// round trip to it counted.
type hopNode struct {
	rt    runtime.Runtime // what the service is given: placement over the node's client
	trips *tripLog
}

func newHopNode(t *testing.T) *hopNode {
	t.Helper()
	srv := httptest.NewUnstartedServer(noderpc.NewServer(testRuntime(t)))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hc := srv.Client()
	trips := &tripLog{rt: hc.Transport}
	hc.Transport = trips
	c := noderpc.NewClient(hc, srv.URL)
	reg := hopRegistry{c}
	return &hopNode{rt: placement.New(placement.Options{Nodes: reg, Where: func(ctx context.Context, id string) (string, error) {
		rec, err := shared.GetSandbox(ctx, id)
		return rec.Node, err
	}}), trips: trips}
}

// hopRegistry is one ready node, "n1", with room.
type hopRegistry struct{ rt runtime.Runtime }

func (r hopRegistry) Placeable(context.Context) ([]nodes.Node, error) {
	return []nodes.Node{{Name: "n1", State: nodes.StateReady, Capacity: nodes.Capacity{CPUs: 2, MemoryMB: 1 << 20, DiskMB: 1 << 20, Sandboxes: 1000}}}, nil
}

func (r hopRegistry) Runtime(context.Context, string) (runtime.Runtime, error) { return r.rt, nil }
func (r hopRegistry) Names(context.Context) ([]string, error)                  { return []string{"n1"}, nil }

// tripLog records each request to the node as its method and path, the
// sandbox id and pid taken out.
type tripLog struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	trips []string
}

var tripIDs = regexp.MustCompile(`/sandboxes/[^/]+|/jobs/[0-9]+`)

func (l *tripLog) RoundTrip(r *http.Request) (*http.Response, error) {
	p := tripIDs.ReplaceAllStringFunc(r.URL.Path, func(s string) string {
		if s[1] == 's' {
			return "/sandboxes/{id}"
		}
		return "/jobs/{pid}"
	})
	l.mu.Lock()
	l.trips = append(l.trips, r.Method+" "+p)
	l.mu.Unlock()
	return l.rt.RoundTrip(r)
}

// take returns the trips since the last take.
func (l *tripLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.trips
	l.trips = nil
	return t
}

// hopService is a Service whose sandboxes all go to one node over the
// node API, and the node's round trip log.
func hopService(t *testing.T) (*sandbox.Service, *tripLog) {
	t.Helper()
	n := newHopNode(t)
	svc, err := sandbox.NewManager(context.Background(), shared, n.rt, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	n.trips.take() // the service's start
	return svc, n.trips
}

// The node round trips of one create -> exec -> delete cycle, pinned: each
// costs a TLS record, HTTP/2 frames and wakeups on both sides, and a new
// one added to the cycle must be a choice, not an accident. (Before the
// one-shot calls it took 8: create, get, spawn, attach, forget, get,
// stats, destroy.)
func TestNodeHopRoundTrips(t *testing.T) {
	svc, trips := hopService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	want := [][]string{
		{"POST /node/v1/sandboxes"},
		{"POST /node/v1/sandboxes/{id}/run"},
		{"POST /node/v1/sandboxes/{id}/destroy"},
	}
	for i := range 2 { // the first cycle warms nothing the second skips
		rec, err := svc.Create(ctx, c, sandbox.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		got = append(got, trips.take())
		res, err := svc.Exec(ctx, c, rec.ID, sandbox.ExecRequest{Cmd: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec: %+v, %v", res, err)
		}
		got = append(got, trips.take())
		if err := svc.Delete(ctx, c, rec.ID); err != nil {
			t.Fatal(err)
		}
		got = append(got, trips.take())
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("cycle %d: node round trips of create, exec, delete (-want +got)\n%s", i, diff)
		}
	}
}

// Commands run to their end across the hop as beside the runtime: exit
// code, output, stdin, timeout (the one-shot call carries them all).
func TestNodeHopExec(t *testing.T) {
	svc, _ := hopService(t)
	testExec(t, svc)
}

// A command whose client goes away is killed across the hop too.
func TestNodeHopExecClientGone(t *testing.T) {
	svc, _ := hopService(t)
	testExecClientGone(t, svc)
}

// A command whose request is cancelled is killed across the hop.
func TestNodeHopExecCancel(t *testing.T) {
	svc, _ := hopService(t)
	testExecCancel(t, svc)
}

// The sandbox's final CPU and memory readings are taken by the destroy
// itself (no Stats call before it), and kept as its final usage.
func TestNodeHopMeteringFinal(t *testing.T) {
	svc, trips := hopService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	rec, err := svc.Create(ctx, c, sandbox.CreateRequest{MemoryMB: 512})
	if err != nil {
		t.Fatal(err)
	}
	// No metrics are read while it runs: the only readings are the
	// destroy's.
	if res := run(t, svc, c, rec.ID, burnCPU(1)+`; python3 -c 'a = b"a" * (100 << 20)'`); res.ExitCode != 0 {
		t.Fatalf("cpu and memory: %+v", res)
	}
	trips.take()
	if err := svc.Delete(ctx, c, rec.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"POST /node/v1/sandboxes/{id}/destroy"}, trips.take()); diff != "" {
		t.Errorf("delete's round trips (-want +got)\n%s", diff)
	}
	m := metricsOf(t, svc, c, rec.ID)
	t.Logf("final: cpu_seconds %.3f, memory_peak_bytes %d", m.CPUSeconds, m.MemoryPeakBytes)
	if !m.Final || m.CPUSeconds < 0.75 || m.MemoryPeakBytes < 100<<20 {
		t.Errorf("final usage %+v: want final, at least 0.75 cpu seconds and 100 MiB peak", m)
	}
}
