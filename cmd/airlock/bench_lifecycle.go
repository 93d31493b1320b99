package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// benchLifecycle times pause, resume, snapshot and fork on the runtime,
// next to a cold create, with a workspace of -mb written once.
func benchLifecycle(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench lifecycle", flag.ContinueOnError)
	n := fs.Int("n", 50, "iterations per row (the fork row runs n/5 forks of -forks)")
	mb := fs.Int("mb", 1024, "MiB written into the workspace before the snapshots")
	forks := fs.Int("forks", 10, "sandboxes per fork")
	stateDir, verbose := runtimeBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 5 || *mb < 0 || *forks < 1 {
		return badInput("bench lifecycle", "-n must be at least 5, -mb at least 0 and -forks at least 1")
	}
	var phases phaseLog
	cfg := linux.Config{StateDir: *stateDir}
	if *verbose {
		cfg.Trace = phases.record
	}
	rt, err := linux.New(cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	b := &lifeBench{ctx: ctx, rt: rt, prefix: fmt.Sprintf("bench-%d-", os.Getpid())}
	fmt.Printf("lifecycle: a sandbox with %d MiB in its workspace (disk pool: %s), n=%d per row\n", *mb, rt.DiskMode(), *n)
	rows, err := b.run(*n, *mb, *forks)
	if err != nil {
		return err
	}
	fmt.Printf("%-40s %9s %9s %9s %9s\n", "operation", "p50", "p95", "p99", "max")
	for _, r := range append(rows, phases.rows()...) {
		r.print()
	}
	return nil
}

type lifeBench struct {
	ctx    context.Context
	rt     *linux.Runtime
	prefix string
	seq    int
}

func (b *lifeBench) id(what string) string {
	b.seq++
	return fmt.Sprintf("%s%s-%d", b.prefix, what, b.seq)
}

// timed runs f n times and returns the durations.
func (b *lifeBench) timed(n int, f func() error) ([]time.Duration, error) {
	var out []time.Duration
	for range n {
		if err := interrupted(b.ctx); err != nil {
			return nil, err
		}
		t := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

func (b *lifeBench) run(n, mb, forks int) ([]row, error) {
	ctx := b.ctx
	var rows []row
	create, err := b.timed(n, func() error {
		sb, err := b.rt.Create(ctx, runtime.Spec{ID: b.id("c")})
		if err != nil {
			return err
		}
		return sb.Destroy(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	rows = append(rows, row{name: "create (cold) + destroy", d: create})
	sb, err := b.rt.Create(ctx, runtime.Spec{ID: b.id("parent"), Limits: runtime.Limits{DiskMB: int64(mb) + 512}})
	if err != nil {
		return nil, err
	}
	defer sb.Destroy(context.WithoutCancel(ctx))
	script := fmt.Sprintf("head -c %dM /dev/urandom > big && sync", mb)
	if st, err := sb.Exec(ctx, runtime.ExecRequest{Shell: script}); err != nil || st.Code != 0 {
		return nil, fmt.Errorf("write %d MiB: %v (exit %d)", mb, err, st.Code)
	}
	p := sb.(runtime.Pauser)
	var pause, resume []time.Duration
	for range n {
		t := time.Now()
		if err := p.Pause(ctx); err != nil {
			return nil, fmt.Errorf("pause: %w", err)
		}
		t1 := time.Now()
		if err := p.Resume(ctx); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		pause, resume = append(pause, t1.Sub(t)), append(resume, time.Since(t1))
	}
	rows = append(rows, row{name: "pause", d: pause}, row{name: "resume", d: resume})
	var snaps []string
	defer func() {
		for _, s := range snaps {
			b.rt.DeleteSnapshot(context.WithoutCancel(ctx), s)
		}
	}()
	snap, err := b.timed(n, func() error {
		name := b.id("s")
		_, err := b.rt.Snapshot(ctx, sb.ID(), name)
		snaps = append(snaps, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	rows = append(rows, row{name: fmt.Sprintf("snapshot (%d MiB workspace)", mb), d: snap})
	from, err := b.timed(n, func() error {
		c, err := b.rt.Create(ctx, runtime.Spec{ID: b.id("f"), Snapshot: snaps[0], Limits: runtime.Limits{DiskMB: int64(mb) + 512}})
		if err != nil {
			return err
		}
		return c.Destroy(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("create from snapshot: %w", err)
	}
	rows = append(rows, row{name: "create from snapshot + destroy", d: from})
	var fork []time.Duration
	for range max(n/5, 1) {
		d, err := b.fork(sb.ID(), forks, int64(mb)+512)
		if err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
		fork = append(fork, d)
	}
	rows = append(rows, row{name: fmt.Sprintf("fork %d, all running", forks), d: fork})
	del, err := b.timed(len(snaps), func() error {
		s := snaps[len(snaps)-1]
		snaps = snaps[:len(snaps)-1]
		return b.rt.DeleteSnapshot(ctx, s)
	})
	if err != nil {
		return nil, fmt.Errorf("delete snapshot: %w", err)
	}
	return append(rows, row{name: "delete snapshot", d: del}), nil
}

// fork is what a fork of the service does on one node: a snapshot, then
// count sandboxes from it, four at a time; it returns the time until all
// run. The forks are destroyed after, untimed.
func (b *lifeBench) fork(parent string, count int, diskMB int64) (time.Duration, error) {
	ctx := b.ctx
	if err := interrupted(ctx); err != nil {
		return 0, err
	}
	name := b.id("fs")
	t := time.Now()
	if _, err := b.rt.Snapshot(ctx, parent, name); err != nil {
		return 0, err
	}
	defer b.rt.DeleteSnapshot(context.WithoutCancel(ctx), name)
	ids := make([]string, count)
	for i := range ids {
		ids[i] = b.id("fork")
	}
	sbs := make([]runtime.Sandbox, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range sbs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sbs[i], errs[i] = b.rt.Create(ctx, runtime.Spec{ID: ids[i], Snapshot: name, Limits: runtime.Limits{DiskMB: diskMB}})
		})
	}
	wg.Wait()
	d := time.Since(t)
	for _, sb := range sbs {
		if sb != nil {
			sb.Destroy(context.WithoutCancel(ctx))
		}
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, nil
}
