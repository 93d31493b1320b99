package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// burnCPU spends secs of CPU time, as the kernel counts it for the process
// (not wall time: a loaded test host must not change the answer).
func burnCPU(secs float64) string {
	return fmt.Sprintf(`python3 -c '
import time
t = time.process_time()
while time.process_time() - t < %g: pass'`, secs)
}

func metricsOf(t *testing.T, svc *sandbox.Service, c sandbox.Caller, id string) sandbox.Metrics {
	t.Helper()
	m, err := svc.SandboxMetrics(context.Background(), c, id)
	if err != nil {
		t.Fatalf("metrics of %s: %v", id, err)
	}
	return m
}

// TestMeteringCPUMemoryExecs: 2 s of CPU and a 200 MB allocation show in
// a running sandbox's metrics, as do its execs; after delete the numbers
// are final, and a new Service on the same store (a daemon restart) reads
// them back, as it does a tenant's usage.
func TestMeteringCPUMemoryExecs(t *testing.T) {
	ctx := context.Background()
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { svc.Close() }()
	c := tenant(t, 0, 0)
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{MemoryMB: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if m := metricsOf(t, svc, c, sb.ID); m.Final || m.ExecCount != 0 || m.State != sandboxrec.Running {
		t.Errorf("fresh sandbox: %+v", m)
	}
	if res := run(t, svc, c, sb.ID, burnCPU(2)); res.ExitCode != 0 {
		t.Fatalf("cpu loop: %+v", res)
	}
	live := metricsOf(t, svc, c, sb.ID)
	t.Logf("after a 2 s CPU loop: cpu_seconds %.3f", live.CPUSeconds)
	if live.CPUSeconds < 1.5 || live.CPUSeconds > 2.5 {
		t.Errorf("cpu_seconds %.3f after a 2 s CPU loop, want 2 ±25%%", live.CPUSeconds)
	}
	// 200 MiB held by python for a moment: the peak keeps it after exit.
	if res := run(t, svc, c, sb.ID, `python3 -c 'a = b"a" * (200 << 20)'`); res.ExitCode != 0 {
		t.Fatalf("allocation: %+v", res)
	}
	live = metricsOf(t, svc, c, sb.ID)
	t.Logf("after allocating 200 MiB: memory_peak_bytes %d (%.0f MiB)", live.MemoryPeakBytes, float64(live.MemoryPeakBytes)/(1<<20))
	if live.MemoryPeakBytes < 200<<20 || live.MemoryPeakBytes > 1024<<20 {
		t.Errorf("memory_peak_bytes %d after allocating 200 MiB", live.MemoryPeakBytes)
	}
	run(t, svc, c, sb.ID, "true")
	if _, err := svc.StartBackground(ctx, c, sb.ID, sandbox.ExecRequest{Command: "true", Background: true}); err != nil {
		t.Fatal(err)
	}
	live = metricsOf(t, svc, c, sb.ID)
	if live.ExecCount != 4 || live.Final || live.WallSeconds <= 0 || live.EgressBytesOut != 0 {
		t.Errorf("live metrics after 4 execs: %+v", live)
	}
	// A refused exec (bad request) is no exec.
	if _, err := svc.Exec(ctx, c, sb.ID, sandbox.ExecRequest{Command: "true", Cwd: "\x00"}); err == nil {
		t.Error("exec with a NUL in cwd ran")
	}

	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	final := metricsOf(t, svc, c, sb.ID)
	if !final.Final || final.State != sandboxrec.Stopped || final.ExecCount != 4 ||
		final.CPUSeconds < live.CPUSeconds || final.CPUSeconds > live.CPUSeconds+0.5 ||
		final.MemoryPeakBytes < 200<<20 || final.EndedAt.IsZero() {
		t.Errorf("final metrics: %+v (live before delete: %+v)", final, live)
	}
	if want := final.EndedAt.Sub(final.CreatedAt).Seconds(); final.WallSeconds != want {
		t.Errorf("final wall_seconds %v, want ended_at - created_at = %v", final.WallSeconds, want)
	}
	time.Sleep(20 * time.Millisecond)
	if again := metricsOf(t, svc, c, sb.ID); again != final {
		t.Errorf("final metrics changed:\n%+v\n%+v", final, again)
	}

	// A restart reads the same numbers from the store.
	svc.Close()
	svc, err = sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := metricsOf(t, svc, c, sb.ID); got != final {
		t.Errorf("after a restart:\n%+v\nwant\n%+v", got, final)
	}
	rep, err := svc.Usage(ctx, c, sandbox.UsageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := shared.StorageBytes(ctx, c.TenantID) // its sandbox's audit log
	// Memory is priced by its limit (1 GiB) over its life.
	want := sandbox.TenantUsage{TenantID: c.TenantID, Sandboxes: 1, SandboxHours: final.WallSeconds / 3600,
		CPUSeconds: final.CPUSeconds, MemoryPeakBytes: final.MemoryPeakBytes, ExecCount: 4, StorageBytes: kept,
		MemoryGiBSeconds: final.WallSeconds}
	if len(rep.Tenants) != 1 || kept == 0 || !closeUsage(rep.Tenants[0], want) {
		t.Errorf("usage: %+v, want %+v", rep.Tenants, want)
	}
}

// closeUsage compares usage lines, hours to the microsecond (a float sum
// in the store).
func closeUsage(a, b sandbox.TenantUsage) bool {
	d, m := a.SandboxHours-b.SandboxHours, a.MemoryGiBSeconds-b.MemoryGiBSeconds
	a.SandboxHours, a.MemoryGiBSeconds = b.SandboxHours, b.MemoryGiBSeconds
	return a == b && d < 1e-9 && d > -1e-9 && m < 1e-6 && m > -1e-6
}

// TestMeteringSurvivesRestart: the counters only the daemon sees (execs)
// of a sandbox that keeps running across a restart are carried over: Close
// writes them, the next Service picks them up.
func TestMeteringSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := tenant(t, 0, 0)
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{})
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	run(t, svc, c, sb.ID, burnCPU(0.3))
	run(t, svc, c, sb.ID, "true")
	svc.Close()

	svc2 := newService(t)
	defer func() {
		if err := svc2.Delete(ctx, c, sb.ID); err != nil {
			t.Error(err)
		}
	}()
	m := metricsOf(t, svc2, c, sb.ID)
	if m.ExecCount != 2 || m.CPUSeconds < 0.25 || m.Final {
		t.Errorf("after a restart: %+v, want 2 execs and 0.3 s of CPU", m)
	}
	run(t, svc2, c, sb.ID, "true")
	if m := metricsOf(t, svc2, c, sb.ID); m.ExecCount != 3 {
		t.Errorf("exec after the restart: exec_count %d, want 3", m.ExecCount)
	}
}

// TestMeteringOnExpiry: a sandbox the reaper stops keeps the CPU time it
// used: the cgroup is read before the runtime tears it down.
func TestMeteringOnExpiry(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	// 5 s: a loaded machine can take more than 2 to start python and
	// give it half a second of CPU.
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{TimeoutS: 5})
	if err != nil {
		t.Fatal(err)
	}
	run(t, svc, c, sb.ID, burnCPU(0.5))
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := svc.Get(ctx, c, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != sandboxrec.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbox still running 20 s after a 5 s timeout")
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := metricsOf(t, svc, c, sb.ID)
	if !m.Final || m.CPUSeconds < 0.45 || m.ExecCount != 1 || m.WallSeconds < 5 {
		t.Errorf("metrics of an expired sandbox: %+v", m)
	}
}

// countingListener counts the bytes its connections read and write.
type countingListener struct {
	net.Listener
	in, out atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.l.out.Add(int64(n))
	return n, err
}

// TestMeteringEgress: the bytes a sandbox sends and receives through the
// proxy match what a loopback server counted on its side of the tunnel,
// plus the CONNECT exchange (which the server never sees).
func TestMeteringEgress(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	down := strings.Repeat("d", 2<<20)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, down)
	}))
	srv.Listener = cl
	srv.Start()
	defer srv.Close()

	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{Egress: &egress.Config{AllowPrivate: loopbackOpened}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := tenant(t, 0, 0)
	target := ln.Addr().String()
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{Network: &egress.Policy{Mode: egress.ModeAllowlist, Allow: []string{target}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Delete(ctx, c, sb.ID)

	// 1 MiB up, 2 MiB down, through a CONNECT tunnel (-p): the tunnel
	// carries the same bytes on both sides of the proxy.
	res := run(t, svc, c, sb.ID, `head -c 1048576 /dev/zero | curl -sS --noproxy '' -p -x http://127.0.0.1:3128 `+
		`-H 'Expect:' --data-binary @- -o /dev/null -w '%{size_download}' http://`+target+`/`)
	if res.ExitCode != 0 || res.Stdout != fmt.Sprint(len(down)) {
		t.Fatalf("curl through the proxy: %+v", res)
	}
	// The tunnel's bytes count when the proxy has seen it close.
	var m sandbox.Metrics
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m = metricsOf(t, svc, c, sb.ID)
		if m.EgressBytesIn >= cl.out.Load() && m.EgressBytesOut >= cl.in.Load() || time.Now().After(deadline) {
			break
		}
	}
	upExtra, downExtra := m.EgressBytesOut-cl.in.Load(), m.EgressBytesIn-cl.out.Load()
	t.Logf("egress out %d (server read %d), in %d (server wrote %d)", m.EgressBytesOut, cl.in.Load(), m.EgressBytesIn, cl.out.Load())
	// The CONNECT request (~100 bytes) and its 39-byte answer.
	if upExtra < 0 || upExtra > 512 || downExtra != int64(len("HTTP/1.1 200 Connection established\r\n\r\n")) {
		t.Errorf("egress bytes out %d, in %d; the server read %d and wrote %d", m.EgressBytesOut, m.EgressBytesIn, cl.in.Load(), cl.out.Load())
	}
	if m.EgressBytesOut < 1<<20 || m.EgressBytesIn < 2<<20 {
		t.Errorf("egress bytes out %d, in %d: less than the bodies", m.EgressBytesOut, m.EgressBytesIn)
	}
	// Still there once the sandbox is gone.
	if err := svc.Delete(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	if f := metricsOf(t, svc, c, sb.ID); !f.Final || f.EgressBytesOut != m.EgressBytesOut || f.EgressBytesIn != m.EgressBytesIn {
		t.Errorf("final egress: %+v, live was out %d in %d", f, m.EgressBytesOut, m.EgressBytesIn)
	}
}

// loopbackOpened is the operator's opening (serve --egress-allow-private)
// of the loopback address the tests' upstream servers listen on: no
// tenant's rule reaches it otherwise.
var loopbackOpened = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
