package linux_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// BenchmarkSpawn measures create -> exec true -> destroy and reports
// percentiles (ns/op alone hides the tail). `airlock bench spawn` prints the
// same with peers side by side.
func BenchmarkSpawn(b *testing.B) {
	r := testRuntimeB(b)
	ctx := context.Background()
	var d []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		sb, err := r.Create(ctx, runtime.Spec{ID: fmt.Sprintf("b%d-%d", os.Getpid(), i)})
		if err != nil {
			b.Fatal(err)
		}
		st, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}})
		if err != nil || st.Code != 0 {
			b.Fatalf("exec true: %v %+v", err, st)
		}
		if err := sb.Destroy(ctx); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
}

// reportPercentiles reports d's p50, p95 and p99 in milliseconds.
func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(q float64) float64 {
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkExecLive measures exec true in one live sandbox, the agent's
// start of a process and its wait; `airlock bench spawn` prints it beside
// a host fork+exec.
func BenchmarkExecLive(b *testing.B) {
	r := testRuntimeB(b)
	ctx := context.Background()
	sb, err := r.Create(ctx, runtime.Spec{ID: fmt.Sprintf("b%d-live", os.Getpid())})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Destroy(context.WithoutCancel(ctx))
	var life []time.Duration // the process's own, fork to reap, as the agent saw it
	exec := func() {
		st, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}})
		if err != nil || st.Code != 0 {
			b.Fatalf("exec true: %v %+v", err, st)
		}
		life = append(life, st.Duration)
	}
	exec() // waits for the agent
	var d []time.Duration
	for b.Loop() {
		start := time.Now()
		exec()
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
	slices.Sort(life)
	b.ReportMetric(float64(life[len(life)/2].Microseconds())/1000, "process-p50-ms")
}
