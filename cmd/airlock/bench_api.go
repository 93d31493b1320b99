package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime"
)

// benchAPI measures create -> exec true -> delete through HTTP on loopback
// against an in-process daemon, beside the same cycle on its runtime
// directly, so the API's overhead shows.
func benchAPI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench api", flag.ContinueOnError)
	n := fs.Int("n", 200, "iterations per row")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := fs.String("memprofile", "", "write a profile of the run's allocations to this file (go tool pprof -sample_index=alloc_space)")
	traceFile := fs.String("trace", "", "write a runtime trace of the run to this file (go tool trace)")
	verbose := fs.Bool("v", false, "also split the overhead of each request into server and transport")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return badInput("bench api", "-n must be at least 1")
	}
	dir, err := os.MkdirTemp("", "airlock-bench-api-")
	if err != nil {
		return err
	}
	os.Chmod(dir, 0o711)
	defer func() {
		unix.Unmount(filepath.Join(dir, "sandboxes"), unix.MNT_DETACH)
		os.RemoveAll(dir)
	}()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		// Every allocation sampled: the cycle's allocations decide how
		// often the collector runs beside it.
		defer func(rate int) { goruntime.MemProfileRate = rate }(goruntime.MemProfileRate)
		goruntime.MemProfileRate = 1
		defer pprof.Lookup("allocs").WriteTo(f, 0)
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	var inRuntime atomic.Int64 // ns the service spent in runtime calls
	dm, err := startDaemon(ctx, dir, 0, nil, func(rt runtime.Runtime) runtime.Runtime {
		return timedRuntime{rt, &inRuntime}
	}, daemonTuning{})
	if err != nil {
		return err
	}
	defer dm.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The server's own time per cycle, less the runtime's: what is left of
	// the overhead is the trip between client and server.
	var inServer atomic.Int64
	// Configured as serve's, so the cycle pays what the daemon's does.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		defer trace.StartRegion(r.Context(), "server").End()
		dm.handler.ServeHTTP(w, r)
		inServer.Add(int64(time.Since(t)))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	key, err := os.ReadFile(dm.keyPath)
	if err != nil {
		return err
	}
	c := client.New("http://"+ln.Addr().String(), string(trimNL(key)))

	// Rows: total, create, exec, delete, for each path; then the API's own
	// time in each HTTP cycle; then, per request, the server's time less
	// the runtime's and the rest (client and transport).
	d := make([][]time.Duration, 17)
	lap := func(row int, t *time.Time) {
		now := time.Now()
		d[row] = append(d[row], now.Sub(*t))
		*t = now
	}
	var rtSeen, srvSeen int64
	split := func(req int, took time.Duration) {
		rt, srv := inRuntime.Load(), inServer.Load()
		server := time.Duration((srv - srvSeen) - (rt - rtSeen))
		d[11+2*req] = append(d[11+2*req], server)
		d[12+2*req] = append(d[12+2*req], took-time.Duration(srv-srvSeen))
		rtSeen, srvSeen = rt, srv
	}
	for i := range *n {
		if err := interrupted(ctx); err != nil {
			return err
		}
		t0 := time.Now()
		t := t0
		sb, err := dm.rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-direct-%d", i)})
		if err != nil {
			return err
		}
		lap(1, &t)
		if _, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}}); err != nil {
			return err
		}
		lap(2, &t)
		if err := sb.Destroy(ctx); err != nil {
			return err
		}
		lap(3, &t)
		d[0] = append(d[0], t.Sub(t0))
		t0 = time.Now()
		t = t0
		inRuntime.Store(0)
		inServer.Store(0)
		rtSeen, srvSeen = 0, 0
		reg := trace.StartRegion(ctx, "client create")
		s, err := c.CreateSandbox(ctx, client.CreateRequest{})
		reg.End()
		if err != nil {
			return err
		}
		lap(5, &t)
		split(0, d[5][i])
		reg = trace.StartRegion(ctx, "client exec")
		_, err = c.Exec(ctx, s.ID, client.ExecRequest{Cmd: []string{"true"}})
		reg.End()
		if err != nil {
			return err
		}
		lap(6, &t)
		split(1, d[6][i])
		reg = trace.StartRegion(ctx, "client delete")
		err = c.DeleteSandbox(ctx, s.ID)
		reg.End()
		if err != nil {
			return err
		}
		lap(7, &t)
		split(2, d[7][i])
		d[4] = append(d[4], t.Sub(t0))
		api, server := t.Sub(t0)-time.Duration(inRuntime.Load()), time.Duration(inServer.Load()-inRuntime.Load())
		d[8] = append(d[8], api)
		d[9] = append(d[9], server)
		d[10] = append(d[10], api-server)
	}
	fmt.Printf("create -> exec true -> delete, n=%d per row, cold sandboxes, alternating\n", *n)
	fmt.Printf("%-40s %9s %9s %9s %9s\n", "path", "p50", "p95", "p99", "max")
	for i, name := range []string{"runtime (in process)", "  create", "  exec true", "  destroy",
		"HTTP API on loopback (Go client)", "  POST /v1/sandboxes", "  POST .../exec", "  DELETE /v1/sandboxes/{id}"} {
		row{name: name, d: d[i]}.print()
	}
	pd, pa := percentiles(d[0]), percentiles(d[4])
	fmt.Printf("difference of the two totals at p50: %s (includes run-to-run spread of the runtime)\n", ms(pa[0]-pd[0]))
	fmt.Println("API overhead per cycle: the client's time less the time spent in runtime calls")
	row{name: "  all of it", d: d[8]}.print()
	row{name: "  in the server: auth, store, service", d: d[9]}.print()
	row{name: "  between: HTTP client and transport", d: d[10]}.print()
	hop, err := hopCycles(ctx, *n)
	if err != nil {
		return fmt.Errorf("through a node: %w", err)
	}
	hopTotal, hopOver := column(hop, func(h hopSplit) time.Duration { return h.total }), column(hop, hopSplit.overhead)
	row{name: "HTTP API, control plane + node (loopback)", d: hopTotal}.print()
	row{name: "  overhead: less the node's runtime calls", d: hopOver}.print()
	row{name: "    client to control plane (HTTP)", d: column(hop, func(h hopSplit) time.Duration { return h.client })}.print()
	row{name: "    control plane, less its node calls", d: column(hop, func(h hopSplit) time.Duration { return h.cp })}.print()
	row{name: "    node calls' transport (HTTP/2, TLS)", d: column(hop, func(h hopSplit) time.Duration { return h.transport })}.print()
	row{name: "    node API handlers, less runtime", d: column(hop, func(h hopSplit) time.Duration { return h.node })}.print()
	fmt.Printf("added by the node hop at p50: %s per cycle; in overhead alone (less each path's runtime calls): %s\n",
		ms(percentiles(hopTotal)[0]-pa[0]), ms(percentiles(hopOver)[0]-percentiles(d[8])[0]))
	if *verbose {
		for i, name := range []string{"POST /v1/sandboxes", "POST .../exec", "DELETE /v1/sandboxes/{id}"} {
			row{name: "  " + name + ", server", d: d[11+2*i]}.print()
			row{name: "  " + name + ", between", d: d[12+2*i]}.print()
		}
	}
	return nil
}

// timedRuntime adds the time spent in its runtime's calls to spent.
type timedRuntime struct {
	runtime.Runtime
	spent *atomic.Int64
}

func (r timedRuntime) since(t time.Time) { r.spent.Add(int64(time.Since(t))) }

// region marks a runtime call in a trace of the run (bench api -trace).
func region(ctx context.Context, name string) func() { return trace.StartRegion(ctx, name).End }

func (r timedRuntime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	defer r.since(time.Now())
	defer region(ctx, "runtime create")()
	sb, err := r.Runtime.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return timedSandbox{sb, r}, nil
}

func (r timedRuntime) Get(ctx context.Context, id string) (runtime.Sandbox, error) {
	defer r.since(time.Now())
	sb, err := r.Runtime.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return timedSandbox{sb, r}, nil
}

type timedSandbox struct {
	runtime.Sandbox
	r timedRuntime
}

func (s timedSandbox) Exec(ctx context.Context, req runtime.ExecRequest) (runtime.ExitStatus, error) {
	defer s.r.since(time.Now())
	defer region(ctx, "runtime exec")()
	return s.Sandbox.Exec(ctx, req)
}

func (s timedSandbox) Destroy(ctx context.Context) error {
	defer s.r.since(time.Now())
	defer region(ctx, "runtime destroy")()
	return s.Sandbox.Destroy(ctx)
}

// Stats is the cgroup reading metering takes at create and delete.
func (s timedSandbox) Stats(ctx context.Context) (runtime.Stats, error) {
	defer s.r.since(time.Now())
	return s.Sandbox.Stats(ctx)
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// The service runs a command as a job of the sandbox's agent where the
// runtime offers jobs, as serve's does: the timed sandbox offers them
// too, or the HTTP row would measure the older exec on the daemon's own
// connection to the agent, a path serve no longer takes.
var _ runtime.JobRunner = timedSandbox{}

func (s timedSandbox) jobs() (runtime.JobRunner, error) {
	jr, ok := s.Sandbox.(runtime.JobRunner)
	if !ok {
		return nil, fmt.Errorf("%w: jobs", runtime.ErrUnsupported)
	}
	return jr, nil
}

func (s timedSandbox) Spawn(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions) (runtime.JobInfo, error) {
	defer s.r.since(time.Now())
	jr, err := s.jobs()
	if err != nil {
		return runtime.JobInfo{}, err
	}
	return jr.Spawn(ctx, req, opts)
}

func (s timedSandbox) Attach(ctx context.Context, pid int, offset int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	defer s.r.since(time.Now())
	defer region(ctx, "runtime attach")()
	jr, err := s.jobs()
	if err != nil {
		return runtime.JobEnd{}, err
	}
	return jr.Attach(ctx, pid, offset, mode, out)
}

func (s timedSandbox) Input(ctx context.Context, pid int, r io.Reader, closeStdin bool) error {
	jr, err := s.jobs()
	if err != nil {
		return err
	}
	return jr.Input(ctx, pid, r, closeStdin)
}

func (s timedSandbox) OpenInput(ctx context.Context, pid int) (runtime.JobStdin, error) {
	jr, err := s.jobs()
	if err != nil {
		return nil, err
	}
	return jr.OpenInput(ctx, pid)
}

func (s timedSandbox) Jobs(ctx context.Context) ([]runtime.JobInfo, error) {
	defer s.r.since(time.Now())
	jr, err := s.jobs()
	if err != nil {
		return nil, err
	}
	return jr.Jobs(ctx)
}

func (s timedSandbox) Forget(ctx context.Context, pid int) error {
	defer s.r.since(time.Now())
	jr, err := s.jobs()
	if err != nil {
		return err
	}
	return jr.Forget(ctx, pid)
}

// The one-call forms pass through, timed as one call, so a service given
// a timed node client makes the calls it would make without the timing.
var (
	_ runtime.LazyGetter     = timedRuntime{}
	_ runtime.OneShotRunner  = timedSandbox{}
	_ runtime.DestroyStatser = timedSandbox{}
)

func (r timedRuntime) LazyGet(ctx context.Context, id string) (runtime.Sandbox, error) {
	defer r.since(time.Now())
	sb, err := runtime.GetLazy(ctx, r.Runtime, id)
	if err != nil {
		return nil, err
	}
	return timedSandbox{sb, r}, nil
}

func (s timedSandbox) RunJob(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions, started func(runtime.JobInfo) error, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	if o, ok := s.Sandbox.(runtime.OneShotRunner); ok {
		defer s.r.since(time.Now())
		return o.RunJob(ctx, req, opts, started, out)
	}
	return runtime.RunJobSteps(ctx, s, req, opts, started, out) // timed call by call
}

func (s timedSandbox) DestroyStats(ctx context.Context) (runtime.FinalStats, error) {
	if d, ok := s.Sandbox.(runtime.DestroyStatser); ok {
		defer s.r.since(time.Now())
		return d.DestroyStats(ctx)
	}
	st, err := s.Stats(ctx)
	return runtime.FinalStats{Stats: st, Err: err}, s.Destroy(ctx)
}

func (r timedRuntime) Locate(id string) string {
	if l, ok := r.Runtime.(runtime.Locator); ok {
		return l.Locate(id)
	}
	return ""
}
