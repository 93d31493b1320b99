package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

func benchCmd(args []string) error {
	// The benches hold mounts, loop devices and sandboxes until they
	// return: Ctrl-C or SIGTERM stops one between iterations so that it
	// cleans up, and a reader that goes away (| head) fails its writes
	// instead of killing it.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return subcommand("bench", benchUsage, args,
		verb{"spawn", func(args []string) error { return benchSpawn(ctx, args) }},
		verb{"api", func(args []string) error { return benchAPI(ctx, args) }},
		verb{"burst", func(args []string) error { return benchBurst(ctx, args) }},
		verb{"density", func(args []string) error { return benchDensity(ctx, args) }},
		verb{"egress", benchEgress},
		verb{"lifecycle", func(args []string) error { return benchLifecycle(ctx, args) }},
		verb{"tasks", func(args []string) error { return benchTasks(ctx, args) }},
	)
}

const benchUsage = `Usage: airlock bench spawn [-n 200] [-pool 2] [-v] [--data-dir DIR]
       airlock bench api [-n 200] [-v]
       airlock bench burst [-n 100] [-pool 2] [-v]
       airlock bench density [-n 500] [-execs 200]
       airlock bench egress [-n 2000] [-n-tunnel 200] [-mb 100] [-runs 5]
       airlock bench lifecycle [-n 50] [-mb 1024] [-forks 10] [-v]
       airlock bench tasks [-n 50] [-pool 2]

spawn times create -> exec true -> destroy on the runtime, exec true in a
live sandbox and airlock run -- true as a whole process, beside unshare,
bwrap and a host fork+exec, with each row's ratio to unshare; api the
same cycle through the HTTP API of an in-process server on a data dir of
its own (removed after); burst n creates at once through that API, then an
exec and a delete in each; density n idle sandboxes: host memory each,
the daemon's, exec among them; egress the egress proxy against direct
connections on loopback; lifecycle pause, resume, snapshot, create from
a snapshot and fork of a sandbox with -mb in its workspace, next to a
cold create; tasks n generic tasks submitted at once to an in-process
server on a fake internet, each one model call with a bound key through
the egress proxy and an artifact: task wall times, the total, and the
sum of their cost_usd. Each prints p50, p95, p99 and max.`

func benchSpawn(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench spawn", flag.ContinueOnError)
	n := fs.Int("n", 200, "iterations per contender")
	poolSize := fs.Int("pool", 2, "warm pool size for the pooled row (0 skips it)")
	stateDir, verbose := runtimeBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *poolSize < 0 {
		return badInput("bench spawn", "-n must be at least 1 and -pool at least 0")
	}
	fmt.Printf("spawn: create -> exec true -> destroy, n=%d per row, every airlock row with full isolation\n", *n)
	var rows []row
	cold, err := spawnRows(ctx, *stateDir, *n, 0, *verbose, 0)
	if err != nil {
		return err
	}
	rows = append(rows, cold...)
	if *poolSize > 0 {
		for _, ready := range slices.Compact([]int{*poolSize, 1, 0}) {
			warm, err := spawnRows(ctx, *stateDir, *n, *poolSize, *verbose, ready)
			if err != nil {
				return err
			}
			rows = append(rows, warm...)
		}
	}
	live, err := liveExecRows(ctx, *stateDir, *n)
	if err != nil {
		return err
	}
	rows = append(rows, live...)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// As a person runs it, embedded (no server), as its own process.
	os.Setenv("AIRLOCK_RUN_LOCAL", "1")
	peers := []struct {
		name string
		argv []string
	}{
		{"airlock run -- true (whole process)", []string{self, "run", "--data-dir", *stateDir, "--", "true"}},
		{"unshare (all namespaces, true)", []string{"unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--net", "--uts", "--ipc", "--cgroup", "true"}},
		{"bwrap (--unshare-all, true)", []string{"bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--die-with-parent", "/usr/bin/true"}},
	}
	var unshare time.Duration
	for _, p := range peers {
		if err := interrupted(ctx); err != nil {
			return err
		}
		if _, err := exec.LookPath(p.argv[0]); err != nil {
			rows = append(rows, row{name: p.name, note: "not installed"})
			continue
		}
		d, err := timeCommand(p.argv, *n)
		if err != nil {
			rows = append(rows, row{name: p.name, note: "failed: " + err.Error()})
			continue
		}
		rows = append(rows, row{name: p.name, d: d})
		if strings.HasPrefix(p.name, "unshare") {
			unshare = percentiles(d)[0]
		}
	}
	fmt.Printf("%-40s %9s %9s %9s %9s %9s\n", "contender", "p50", "p95", "p99", "max", "p50/unshare")
	for _, r := range rows {
		r.printRatio(unshare)
	}
	return nil
}

// runtimeBenchFlags adds what every bench of the runtime takes: its data
// dir, and -v for the time of each phase.
func runtimeBenchFlags(fs *flag.FlagSet) (stateDir *string, verbose *bool) {
	stateDir = dataDirFlag(fs, defaultDataDir(), "where sandboxes and templates live ($AIRLOCK_DATA_DIR)")
	verbose = fs.Bool("v", false, "also print where the time goes, phase by phase")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), benchUsage)
		printFlags(fs)
	}
	return stateDir, verbose
}

type row struct {
	name string
	d    []time.Duration
	note string // instead of figures: not installed, failed
}

func (r row) print() {
	p := percentiles(r.d)
	fmt.Printf("%-40s %9s %9s %9s %9s\n", r.name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]))
}

// printRatio prints r with its p50's ratio to base (a top-level row of
// its own: not for the phases under a row).
func (r row) printRatio(base time.Duration) {
	if r.note != "" {
		fmt.Printf("%-40s %s\n", r.name, r.note)
		return
	}
	p := percentiles(r.d)
	ratio := ""
	if base > 0 && !strings.HasPrefix(r.name, " ") {
		ratio = fmt.Sprintf("%.2fx", float64(p[0])/float64(base))
	}
	fmt.Printf("%-40s %9s %9s %9s %9s %9s\n", r.name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]), ratio)
}

// spawnRows runs n create -> exec true -> destroy cycles on a runtime with
// the given warm pool size and returns the total and per-step rows. Each
// cycle starts once the pool holds ready sandboxes (the wait is not
// counted). With the pool full (at the size the create rate asks for, no
// refill due), the refills happened between cycles: a server whose
// creates come slower than it boots, which is most of the time. With one
// ready, the refill of the claim before goes on at its low priority
// beside the cycle: a server with a pool sized for its create rate, busy.
// With none (back to back), the cycles outrun the refills, which get only
// the CPU the cycles leave, and most creates find the pool empty and boot
// cold.
func spawnRows(ctx context.Context, stateDir string, n, poolSize int, verbose bool, ready int) ([]row, error) {
	var phases phaseLog
	cfg := linux.Config{StateDir: stateDir, PoolSize: poolSize}
	if verbose {
		cfg.Trace = phases.record
	}
	rt, err := linux.New(cfg)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	label := "airlock, cold"
	if poolSize > 0 {
		switch ready {
		case 0:
			label = fmt.Sprintf("airlock, warm pool of %d, back to back", poolSize)
		case poolSize:
			label = fmt.Sprintf("airlock, warm pool of %d, full", poolSize)
		default:
			label = fmt.Sprintf("airlock, warm pool of %d, a sandbox ready", poolSize)
		}
		// Start measuring with the pool full, as a running server would be.
		for deadline := time.Now().Add(time.Minute); rt.PoolReady() < poolSize; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return nil, errors.New("the warm pool did not fill within a minute")
			}
		}
	}
	var create, execT, destroy, total []time.Duration
	for i := range n {
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		// "Full" waits for every refill to be done, the pool at the size
		// the create rate asks for: a create then meets no boot beside it.
		for deadline := time.Now().Add(time.Minute); rt.PoolReady() < ready || poolSize > 0 && ready == poolSize && !rt.PoolFull(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return nil, errors.New("the warm pool did not refill within a minute")
			}
		}
		t0 := time.Now()
		sb, err := rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-%d-%d-%d", os.Getpid(), poolSize, i)})
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		t1 := time.Now()
		st, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}})
		t2 := time.Now()
		derr := sb.Destroy(ctx)
		t3 := time.Now()
		if err != nil || st.Code != 0 || derr != nil {
			return nil, fmt.Errorf("iteration %d: exec %v (exit %d), destroy %v", i, err, st.Code, derr)
		}
		create, execT, destroy, total = append(create, t1.Sub(t0)), append(execT, t2.Sub(t1)), append(destroy, t3.Sub(t2)), append(total, t3.Sub(t0))
	}
	rows := []row{{name: label, d: total}, {name: "  create", d: create}, {name: "  exec true", d: execT}, {name: "  destroy", d: destroy}}
	return append(rows, phases.rows()...), nil
}

// phaseLog collects the runtime's phase times (linux.Config.Trace) for
// the verbose rows, in the order phases first ran.
type phaseLog struct {
	mu     sync.Mutex
	phases map[string][]time.Duration
	order  []string
}

func (p *phaseLog) record(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phases == nil {
		p.phases = map[string][]time.Duration{}
	}
	if _, ok := p.phases[name]; !ok {
		p.order = append(p.order, name)
	}
	p.phases[name] = append(p.phases[name], d)
}

// rows are the phases as rows under a contender's.
func (p *phaseLog) rows() []row {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []row
	for _, name := range p.order {
		out = append(out, row{name: "    " + name, d: p.phases[name]})
	}
	return out
}

// interrupted is the error of a bench stopped by a signal.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

func timeCommand(argv []string, n int) ([]time.Duration, error) {
	var out []time.Duration
	for range n {
		t := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

// percentiles returns p50, p95, p99 and max (nearest rank).
func percentiles(d []time.Duration) [4]time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.5) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return [4]time.Duration{at(0.50), at(0.95), at(0.99), s[len(s)-1]}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// liveExecRows times exec true in one live sandbox (after a first exec,
// which waits for the agent's start) beside a fork+exec of true on the
// host from this process.
func liveExecRows(ctx context.Context, stateDir string, n int) ([]row, error) {
	rt, err := linux.New(linux.Config{StateDir: stateDir})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	sb, err := rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-%d-live", os.Getpid())})
	if err != nil {
		return nil, err
	}
	defer sb.Destroy(context.WithoutCancel(ctx))
	run := func() error {
		st, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}})
		if err == nil && st.Code != 0 {
			err = fmt.Errorf("exit %d", st.Code)
		}
		return err
	}
	if err := run(); err != nil {
		return nil, fmt.Errorf("exec in a live sandbox: %w", err)
	}
	var in []time.Duration
	for range n {
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		t := time.Now()
		if err := run(); err != nil {
			return nil, fmt.Errorf("exec in a live sandbox: %w", err)
		}
		in = append(in, time.Since(t))
	}
	host, err := timeCommand([]string{"true"}, n)
	if err != nil {
		return nil, err
	}
	return []row{{name: "airlock, exec true in a live sandbox", d: in}, {name: "host fork+exec true (this process)", d: host}}, nil
}
