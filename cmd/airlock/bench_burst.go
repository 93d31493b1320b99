package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/client"
)

// benchBurst creates n sandboxes at once through the HTTP API of an
// in-process daemon (as n clients would), then execs true in each, then
// destroys them, each step all at once, and prints each step's latencies
// and wall time. It does so twice: first with the warm pool at its
// configured size, then again once the pool has grown to what the first
// burst asked for (it holds a burst's size for a while, so that the next
// one like it finds its sandboxes booted).
func benchBurst(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench burst", flag.ContinueOnError)
	n := fs.Int("n", 100, "sandboxes created at once")
	pool := fs.Int("pool", 2, "the daemon's warm pool size (serve's default)")
	verbose := fs.Bool("v", false, "also print where the time goes: the runtime's phases of every boot in each round, the pool's refills included")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), benchUsage)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *pool < 0 {
		return badInput("bench burst", "-n must be at least 1 and -pool at least 0")
	}
	// Each round's phases go to a log of its own.
	var phases atomic.Pointer[phaseLog]
	phases.Store(&phaseLog{})
	var tune daemonTuning
	if *verbose {
		tune.trace = func(name string, d time.Duration) { phases.Load().record(name, d) }
	}
	b, err := startBenchServer(ctx, *pool, nil, tune)
	if err != nil {
		return err
	}
	defer b.close()
	// Start with the pool full, as a running server would be.
	for deadline := time.Now().Add(time.Minute); b.d.rt.PoolReady() < *pool && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ids := make([]string, *n)
	step := func(what string, do func(i int) error) (row, time.Duration, error) {
		d := make([]time.Duration, *n)
		errs := make([]error, *n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range *n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				errs[i] = do(i)
				d[i] = time.Since(t)
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		for i, err := range errs {
			if err != nil {
				return row{}, 0, fmt.Errorf("%s %d: %w", what, i, err)
			}
		}
		return row{name: "  " + what, d: d}, wall, nil
	}
	fmt.Printf("burst: %d sandboxes at once through the HTTP API (in-process daemon, warm pool %d)\n", *n, *pool)
	fmt.Printf("%-40s %9s %9s %9s %9s %9s\n", "step", "p50", "p95", "p99", "max", "all done")
	defer func() {
		for _, id := range ids {
			if id != "" {
				b.c.DeleteSandbox(context.WithoutCancel(ctx), id)
			}
		}
	}()
	steps := []struct {
		what string
		do   func(i int) error
	}{
		{"POST /v1/sandboxes (until ready)", func(i int) error {
			sb, err := b.c.CreateSandbox(ctx, client.CreateRequest{})
			ids[i] = sb.ID
			return err
		}},
		{"exec true in each", func(i int) error {
			res, err := b.c.Exec(ctx, ids[i], client.ExecRequest{Cmd: []string{"true"}})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d", res.ExitCode)
			}
			return err
		}},
		{"DELETE each", func(i int) error {
			err := b.c.DeleteSandbox(ctx, ids[i])
			if err == nil {
				ids[i] = ""
			}
			return err
		}},
	}
	for round := range 2 {
		if round == 0 {
			fmt.Printf("first burst, %d ready in the pool\n", b.d.rt.PoolReady())
		} else {
			// The pool grows at its low priority, a boot at a time, to
			// what the first burst asked for (bounded by maxPool and the
			// host's memory).
			t := time.Now()
			for deadline := t.Add(5 * time.Minute); !b.d.rt.PoolFull(); time.Sleep(10 * time.Millisecond) {
				if err := interrupted(ctx); err != nil {
					return err
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the warm pool did not grow within 5 minutes (%d ready)", b.d.rt.PoolReady())
				}
			}
			fmt.Printf("the same burst again, %d ready in the pool (it grew in %s)\n", b.d.rt.PoolReady(), time.Since(t).Round(time.Millisecond))
		}
		phases.Store(&phaseLog{})
		for _, s := range steps {
			if err := interrupted(ctx); err != nil {
				return err
			}
			r, wall, err := step(s.what, s.do)
			if err != nil {
				return err
			}
			p := percentiles(r.d)
			fmt.Printf("%-40s %9s %9s %9s %9s %9s\n", r.name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]), ms(wall))
		}
		if *verbose {
			fmt.Println("  the runtime's phases in this round (every boot: the burst's and the pool's)")
			for _, r := range phases.Load().rows() {
				r.print()
			}
		}
	}
	return nil
}
