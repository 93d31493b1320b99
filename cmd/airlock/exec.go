package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func execCmd(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	env := envFlags{}
	timeout := duration(fs, "timeout", 0, time.Second, sandbox.MaxTimeout, "kill the command after `DURATION`, 1s to 24h (default: when the sandbox expires)")
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	workdir := fs.String("workdir", "", "working directory (default the sandbox's)")
	background := fs.Bool("background", false, "start the command in the background, print its pid and return (a server, say)")
	tag := fs.String("tag", "", "with --background: a name for the process")
	noStdin := fs.Bool("no-stdin", false, "do not read stdin (as </dev/null; in a loop that reads stdin itself)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock exec [flags] ID [--] CMD [ARGS...]

Run a command in a sandbox, stream its output, and exit with its exit
status (128+N when signal N killed it). Stdin, when it is not a terminal
(a pipe, a file), is read to its end and given to the command: UTF-8
text that fits the request, whose size the server bounds (1 MiB by
default); copy more, or bytes, in with 'airlock cp - ID:FILE' and redirect
from FILE. --no-stdin (or </dev/null) gives none. With --background the command keeps running after
this returns (until it exits, the sandbox ends or the daemon restarts);
the pid printed names it in the processes API, and stdin is not read.
A DURATION is `+durationSyntax+`.`)
		fs.PrintDefaults()
	}
	pos, argv, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 || len(argv) == 0 {
		return usageError(fs)
	}
	if *tag != "" && !*background {
		return errors.New("--tag needs --background")
	}
	id := pos[0]
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	if *background {
		p, err := c.StartProcess(ctx, id, client.ExecRequest{Cmd: argv, Cwd: *workdir, Env: env, Timeout: *timeout}, *tag)
		if err != nil {
			return sandboxErr(ctx, c, id, err)
		}
		fmt.Println(p.Pid)
		return nil
	}
	instead := "copy it in with 'airlock cp - " + id + ":FILE' and redirect from FILE"
	stdin := ""
	if !*noStdin {
		if stdin, err = remoteStdin(instead); err != nil {
			return err
		}
	}
	res, err := c.ExecStream(ctx, id, client.ExecRequest{
		Cmd: argv, Cwd: *workdir, Env: env, Timeout: *timeout, Stdin: stdin,
	}, os.Stdout, os.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return exitError(130) // interrupted, as a shell reports SIGINT
		}
		return sandboxErr(ctx, c, id, stdinTooLarge(err, stdin, instead))
	}
	switch {
	case res.TimedOut && *timeout > 0:
		fmt.Fprintf(os.Stderr, "airlock: command timed out after %s\n", shortDuration(*timeout))
	case res.TimedOut:
		fmt.Fprintln(os.Stderr, "airlock: command timed out")
	case res.OOMKilled:
		fmt.Fprintln(os.Stderr, "airlock: command was killed: out of memory")
	}
	if res.Signal != 0 {
		return exitError(128 + res.Signal)
	}
	return exitError(res.ExitCode)
}
