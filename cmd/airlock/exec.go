package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/client"
)

func execCmd(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	env := envFlags{}
	timeout := fs.Duration("timeout", 0, "kill the command after this long (default: when the sandbox expires)")
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	workdir := fs.String("workdir", "", "working directory (default the sandbox's)")
	background := fs.Bool("background", false, "start the command in the background, print its pid and return (a server, say)")
	tag := fs.String("tag", "", "with --background: a name for the process")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock exec [flags] ID [--] CMD [ARGS...]

Run a command in a sandbox, stream its output, and exit with its exit
status (128+N when signal N killed it). Stdin is not forwarded yet: the
command reads an empty stdin. With --background the command keeps running
after this returns (until it exits, the sandbox ends or the daemon
restarts); the pid printed names it in the processes API.`)
		fs.PrintDefaults()
	}
	pos, argv, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 || len(argv) == 0 {
		return usageError(fs)
	}
	if *timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	if *tag != "" && !*background {
		return errors.New("--tag needs --background")
	}
	ctx, stop := remoteContext()
	defer stop()
	if *background {
		p, err := remote().StartProcess(ctx, pos[0], client.ExecRequest{Cmd: argv, Cwd: *workdir, Env: env, Timeout: *timeout}, *tag)
		if err != nil {
			return err
		}
		fmt.Println(p.Pid)
		return nil
	}
	res, err := remote().ExecStream(ctx, pos[0], client.ExecRequest{
		Cmd: argv, Cwd: *workdir, Env: env, Timeout: *timeout,
	}, os.Stdout, os.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return exitError(130) // interrupted, as a shell reports SIGINT
		}
		return err
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(os.Stderr, "airlock: command timed out after %s\n", *timeout)
	case res.OOMKilled:
		fmt.Fprintln(os.Stderr, "airlock: command was killed: out of memory")
	}
	if res.Signal != 0 {
		return exitError(128 + res.Signal)
	}
	return exitError(res.ExitCode)
}
