package noderpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/runtime"
)

// run collects what a RunJob hands its callbacks.
type runLog struct {
	infos  []runtime.JobInfo
	stdout bytes.Buffer
	stderr bytes.Buffer
	outErr error // what out returns
}

func (l *runLog) started(i runtime.JobInfo) error { l.infos = append(l.infos, i); return nil }

func (l *runLog) out(o runtime.JobOutput) error {
	if l.outErr != nil {
		return l.outErr
	}
	if o.Stream == "stderr" {
		l.stderr.Write(o.Data)
	} else {
		l.stdout.Write(o.Data)
	}
	return nil
}

func (l *runLog) run(ctx context.Context, sb runtime.Sandbox, req runtime.ExecRequest, opts runtime.JobOptions) (runtime.JobEnd, error) {
	return runtime.RunJob(ctx, sb.(runtime.JobRunner), req, opts, l.started, l.out)
}

// jobsOf is the pids of the jobs the node keeps in sb.
func jobsOf(t *testing.T, local runtime.Sandbox) map[int]bool {
	t.Helper()
	jobs, err := local.(runtime.JobRunner).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]bool{}
	for _, j := range jobs {
		m[j.Pid] = j.Running
	}
	return m
}

// A job run to its end in one call: its exit, its output by stream, its
// stdin, a timeout; forgotten on the node once ended.
func TestRunJob(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	if _, ok := sb.(runtime.OneShotRunner); !ok {
		t.Fatal("a node's sandbox is not a OneShotRunner")
	}
	var l runLog
	end, err := l.run(ctx, sb, runtime.ExecRequest{Shell: "echo out; echo err >&2; cat; exit 3", Stdin: strings.NewReader("fed in")},
		runtime.JobOptions{Meta: json.RawMessage(`{"tag":"t"}`)})
	if err != nil || end.Exit == nil || end.Exit.Code != 3 {
		t.Fatalf("run: %+v, %v", end, err)
	}
	if len(l.infos) != 1 || l.infos[0].Pid <= 0 || string(l.infos[0].Meta) != `{"tag":"t"}` {
		t.Errorf("started with %+v", l.infos)
	}
	if l.stdout.String() != "out\nfed in" || l.stderr.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q", l.stdout.String(), l.stderr.String())
	}
	if end.Next != int64(len("out\nfed inerr\n")) {
		t.Errorf("end at %d", end.Next)
	}
	if jobs := jobsOf(t, local); len(jobs) != 0 {
		t.Errorf("the node keeps jobs %v after their end", jobs)
	}

	l = runLog{}
	end, err = l.run(ctx, sb, runtime.ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond}, runtime.JobOptions{})
	if err != nil || end.Exit == nil || !end.Exit.TimedOut || end.Exit.Code != 137 {
		t.Errorf("a job past its timeout: %+v, %v", end, err)
	}

	// Its failures are the node's, kinds and message.
	for _, req := range []runtime.ExecRequest{{Argv: []string{"/no/such/program"}}, {Argv: []string{"true"}, Cwd: "/no/such/dir"}} {
		_, err := (&runLog{}).run(ctx, sb, req, runtime.JobOptions{})
		_, lerr := (&runLog{}).run(ctx, local, req, runtime.JobOptions{})
		sameError(t, "run "+strings.Join(req.Argv, " "), err, lerr)
	}
	gone, _ := e.c.LazyGet(ctx, "nrpc-no-such-sandbox")
	_, err = (&runLog{}).run(ctx, gone, runtime.ExecRequest{Argv: []string{"true"}}, runtime.JobOptions{})
	_, lerr := e.rt.Get(ctx, "nrpc-no-such-sandbox")
	sameError(t, "run in no sandbox", err, lerr)
}

// A run cut off (its context ended, its output refused) leaves the job to
// run on the node, for its caller to follow or end.
func TestRunJobCutOff(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	local := e.local(t, sb)
	jr := sb.(runtime.JobRunner)

	ctx, cancel := context.WithCancel(context.Background())
	var pid int
	_, err := runtime.RunJob(ctx, jr, runtime.ExecRequest{Argv: []string{"sleep", "300"}}, runtime.JobOptions{},
		func(i runtime.JobInfo) error { pid = i.Pid; time.AfterFunc(200*time.Millisecond, cancel); return nil },
		func(runtime.JobOutput) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled run: %v", err)
	}
	if running, kept := jobsOf(t, local)[pid]; !kept || !running {
		t.Fatalf("job %d after a cancelled run: kept %v, running %v", pid, kept, running)
	}
	if err := sb.Signal(context.Background(), pid, int(syscall.SIGKILL)); err != nil {
		t.Fatal(err)
	}
	_, end, err := attach(jr, pid, 0, runtime.AttachFollow)
	if err != nil || end.Exit == nil || end.Exit.Signal != int(syscall.SIGKILL) {
		t.Errorf("the cancelled job's end: %+v, %v", end, err)
	}

	boom := errors.New("boom")
	l := runLog{outErr: boom}
	_, err = l.run(context.Background(), sb, runtime.ExecRequest{Shell: "echo hi; sleep 300"}, runtime.JobOptions{})
	if !errors.Is(err, boom) || len(l.infos) != 1 {
		t.Fatalf("a run whose output is refused: %v", err)
	}
	if running, kept := jobsOf(t, local)[l.infos[0].Pid]; !kept || !running {
		t.Errorf("job after a refused output: kept %v, running %v", kept, running)
	}
}

// A destroy reads the final stats in the same call; a sandbox destroyed
// already has none, and is no error.
func TestDestroyStats(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(t, e.c, runtime.Spec{})
	mustSh(t, sb, "head -c 20000000 /dev/urandom | sha256sum >/dev/null")
	final, err := sb.(runtime.DestroyStatser).DestroyStats(ctx)
	if err != nil || final.Err != nil || final.Stats.CPUSeconds <= 0 || final.Stats.MemoryPeakBytes <= 0 {
		t.Fatalf("destroy: %+v, %v", final, err)
	}
	if _, err := e.rt.Get(ctx, sb.ID()); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the node still has the sandbox: %v", err)
	}
	final, err = sb.(runtime.DestroyStatser).DestroyStats(ctx)
	if err != nil || !errors.Is(final.Err, runtime.ErrNotFound) || final.Stats != (runtime.Stats{}) {
		t.Errorf("destroy again: %+v, %v", final, err)
	}
}

// tripCounter counts the requests of a client.
type tripCounter struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	paths []string
}

func (c *tripCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

func (c *tripCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.paths
	c.paths = nil
	return p
}

// Against a node older than the one-shot calls (which answers them as any
// route it lacks), the client makes them of the older calls.
func TestOneShotOnOlderNode(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	node := noderpc.NewServer(e.rt)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, "/run") || strings.HasSuffix(r.URL.Path, "/destroy")) {
			// What protocol 1's first nodes answer.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"message": "not supported on this host: POST " + r.URL.Path + ": no such route on this node", "kinds": []string{"unsupported"}})
			return
		}
		node.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	hc := srv.Client()
	trips := &tripCounter{rt: hc.Transport}
	hc.Transport = trips
	c := noderpc.NewClient(hc, srv.URL)
	sb := e.create(t, c, runtime.Spec{})
	local := e.local(t, sb)
	var l runLog
	end, err := l.run(ctx, sb, runtime.ExecRequest{Shell: "cat; exit 5", Stdin: strings.NewReader("old")}, runtime.JobOptions{})
	if err != nil || end.Exit == nil || end.Exit.Code != 5 || l.stdout.String() != "old" {
		t.Errorf("run on an older node: %+v %q, %v", end, l.stdout.String(), err)
	}
	if jobs := jobsOf(t, local); len(jobs) != 0 {
		t.Errorf("the node keeps jobs %v after their end", jobs)
	}
	final, err := sb.(runtime.DestroyStatser).DestroyStats(ctx)
	if err != nil || final.Err != nil || final.Stats.MemoryPeakBytes <= 0 {
		t.Errorf("destroy on an older node: %+v, %v", final, err)
	}
	if _, err := e.rt.Get(ctx, sb.ID()); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the node still has the sandbox: %v", err)
	}
	got := trips.take()
	for i, p := range got {
		p = strings.ReplaceAll(p, sb.ID(), "{id}")
		if len(l.infos) == 1 {
			p = strings.ReplaceAll(p, "/jobs/"+strconv.Itoa(l.infos[0].Pid), "/jobs/{pid}")
		}
		got[i] = p
	}
	want := []string{
		"POST /node/v1/sandboxes",
		"POST /node/v1/sandboxes/{id}/run", "POST /node/v1/sandboxes/{id}/jobs", "POST /node/v1/sandboxes/{id}/jobs/{pid}/input",
		"GET /node/v1/sandboxes/{id}/jobs/{pid}/output", "DELETE /node/v1/sandboxes/{id}/jobs/{pid}",
		"POST /node/v1/sandboxes/{id}/destroy", "GET /node/v1/sandboxes/{id}/stats", "DELETE /node/v1/sandboxes/{id}",
	}
	// Input goes on beside the attach: its place among the calls varies.
	less := func(a, b string) bool { return a < b }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("calls to an older node (-want +got)\n%s", diff)
	}
}
