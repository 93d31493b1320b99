package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

func benchCmd(args []string) error {
	if len(args) == 0 || args[0] != "spawn" {
		return errors.New("usage: airlock bench spawn [-n 200]")
	}
	fs := flag.NewFlagSet("bench spawn", flag.ContinueOnError)
	n := fs.Int("n", 200, "iterations per contender")
	stateDir := fs.String("state-dir", defaultStateDir(), "where sandboxes and templates live")
	verbose := fs.Bool("v", false, "also print where the time goes, phase by phase")
	if err := fs.Parse(args[1:]); err != nil {
		return exitError(2)
	}
	if *n < 1 {
		return errors.New("-n must be at least 1")
	}
	phases := map[string][]time.Duration{}
	var order []string
	cfg := linux.Config{StateDir: *stateDir}
	if *verbose {
		cfg.Trace = func(name string, d time.Duration) {
			if _, ok := phases[name]; !ok {
				order = append(order, name)
			}
			phases[name] = append(phases[name], d)
		}
	}
	rt, err := linux.New(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var create, execT, destroy, total []time.Duration
	for i := range *n {
		t0 := time.Now()
		sb, err := rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-%d-%d", os.Getpid(), i)})
		if err != nil {
			return fmt.Errorf("iteration %d: %w", i, err)
		}
		t1 := time.Now()
		st, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}})
		t2 := time.Now()
		derr := sb.Destroy(ctx)
		t3 := time.Now()
		if err != nil || st.Code != 0 || derr != nil {
			return fmt.Errorf("iteration %d: exec %v (exit %d), destroy %v", i, err, st.Code, derr)
		}
		create, execT, destroy, total = append(create, t1.Sub(t0)), append(execT, t2.Sub(t1)), append(destroy, t3.Sub(t2)), append(total, t3.Sub(t0))
	}
	fmt.Printf("spawn: create -> exec true -> destroy, n=%d per row\n", *n)
	fmt.Printf("%-34s %9s %9s %9s %9s\n", "contender", "p50", "p95", "p99", "max")
	row := func(name string, d []time.Duration) {
		p := percentiles(d)
		fmt.Printf("%-34s %9s %9s %9s %9s\n", name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]))
	}
	row("airlock (full isolation)", total)
	row("  create", create)
	row("  exec true", execT)
	row("  destroy", destroy)
	for _, name := range order {
		row("    "+name, phases[name])
	}
	peers := []struct {
		name string
		argv []string
	}{
		{"unshare (all namespaces, true)", []string{"unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--net", "--uts", "--ipc", "--cgroup", "true"}},
		{"bwrap (--unshare-all, true)", []string{"bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--die-with-parent", "/usr/bin/true"}},
	}
	for _, p := range peers {
		if _, err := exec.LookPath(p.argv[0]); err != nil {
			fmt.Printf("%-34s not installed\n", p.name)
			continue
		}
		d, err := timeCommand(p.argv, *n)
		if err != nil {
			fmt.Printf("%-34s failed: %v\n", p.name, err)
			continue
		}
		row(p.name, d)
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
