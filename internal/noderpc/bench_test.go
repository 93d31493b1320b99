package noderpc_test

import (
	"context"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
)

// BenchmarkRoundTrip is what a round trip through the hop costs beyond
// the runtime's own work: a unary call (Get, which the node's runtime
// answers from memory) and a job run to its end (true), each beside the
// same on the node's runtime.
func BenchmarkRoundTrip(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	sb := e.create(b, e.c, runtime.Spec{})
	local := e.local(b, sb)
	for _, bc := range []struct {
		name string
		rt   runtime.Runtime
		sb   runtime.Sandbox
	}{{"hop", e.c, sb}, {"local", e.rt, local}} {
		b.Run("get/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bc.rt.Get(ctx, sb.ID()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("run/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				end, err := runtime.RunJob(ctx, bc.sb.(runtime.JobRunner), runtime.ExecRequest{Argv: []string{"true"}}, runtime.JobOptions{},
					func(runtime.JobInfo) error { return nil }, func(runtime.JobOutput) error { return nil })
				if err != nil || end.Exit == nil {
					b.Fatal(end, err)
				}
			}
		})
	}
}
