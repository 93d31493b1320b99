package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// envFlags collects repeated --env K=V.
type envFlags map[string]string

func (e envFlags) String() string { return "" }
func (e envFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" || strings.ContainsAny(k, "\x00") || strings.ContainsRune(val, 0) {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	e[k] = val
	return nil
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var lim limitFlags
	lim.register(fs, "", runtime.DefaultLimits)
	env := envFlags{}
	timeout := duration(fs, "timeout", 0, time.Second, sandbox.MaxTimeout, "kill the command after `DURATION`, 1s to 24h (default: none embedded, the sandbox's 5m on a server)")
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	workdir := fs.String("workdir", "", "working directory inside the sandbox (default /home/user)")
	dataDir := dataDirFlag(fs, defaultDataDir(), "where an embedded run keeps sandboxes and templates ($AIRLOCK_DATA_DIR)")
	var network networkFlags
	network.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock run [flags] -- CMD [ARGS...]

Runs CMD in a new sandbox and destroys it. With a server reachable at
$AIRLOCK_URL (default http://127.0.0.1:7070) and a key, the sandbox is the
server's; otherwise it runs embedded, in this process, and says so on
stderr (AIRLOCK_RUN_LOCAL=1 forces that).
A DURATION is `+durationSyntax+`.`)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return exitError(2)
	}
	policy, err := network.policy()
	if err != nil {
		return err
	}
	l := lim.values()
	c, why := reachableServer()
	if c != nil {
		np, _ := network.clientPolicy()
		return runRemote(c, client.CreateRequest{
			CPUs: l.CPUs, MemoryMB: l.MemoryMB, Pids: l.Pids, DiskMB: l.DiskMB, Env: env, Workdir: *workdir, Network: np,
			Secrets: network.secrets,
		}, argv, *timeout)
	}
	if len(network.secrets) > 0 {
		return errors.New("--secret needs a server (secrets live in its store): start `airlock serve`, or unset AIRLOCK_RUN_LOCAL")
	}
	fmt.Fprintf(os.Stderr, "airlock: running embedded, not on a server (%s); data in %s\n", why, *dataDir)
	rt, err := linux.New(linux.Config{StateDir: *dataDir, DieWithCaller: true})
	if err != nil {
		return err
	}
	spec := runtime.Spec{
		ID:      newID(),
		Limits:  l,
		Env:     env,
		Workdir: *workdir,
	}
	ctx := context.Background()
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		return err
	}
	var cmdEnv map[string]string
	if policy != nil {
		var stopProxy func()
		cmdEnv, stopProxy, err = embeddedEgress(ctx, sb, spec.ID, *policy)
		if err != nil {
			sb.Destroy(ctx)
			return fmt.Errorf("egress proxy: %w", err)
		}
		defer stopProxy()
	}
	st, err := runIn(ctx, sb, argv, cmdEnv, *timeout)
	if derr := sb.Destroy(ctx); derr != nil && err == nil {
		err = fmt.Errorf("destroy sandbox: %w", derr)
	}
	if err != nil {
		return err
	}
	switch {
	case st.TimedOut:
		fmt.Fprintf(os.Stderr, "airlock: command timed out after %s\n", shortDuration(*timeout))
	case st.OOMKilled:
		fmt.Fprintln(os.Stderr, "airlock: command was killed: out of memory")
	}
	return exitError(st.Code)
}

// runIn runs argv with the terminal's stdio attached, forwarding SIGINT,
// SIGTERM and SIGHUP to the command.
func runIn(ctx context.Context, sb runtime.Sandbox, argv []string, env map[string]string, timeout time.Duration) (runtime.ExitStatus, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	p, err := sb.Start(ctx, runtime.ExecRequest{
		Argv: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Timeout: timeout,
	})
	if err != nil {
		return runtime.ExitStatus{}, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				sb.Signal(ctx, p.Pid(), int(s.(syscall.Signal)))
			case <-done:
				return
			}
		}
	}()
	return p.Wait()
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}
