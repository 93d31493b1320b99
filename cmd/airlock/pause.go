package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func pauseCmd(args []string) error {
	return pauseOrResume("pause", "Freeze every process of the sandboxes: their memory is kept, they use\nno CPU and their lifetime clock stops until 'airlock resume'.", args,
		(*client.Client).PauseSandbox)
}

func resumeCmd(args []string) error {
	return pauseOrResume("resume", "Thaw paused sandboxes.", args,
		(*client.Client).ResumeSandbox)
}

func pauseOrResume(verb, about string, args []string, do func(*client.Client, context.Context, string) (client.Sandbox, error)) error {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "Usage: airlock %s ID...\n\n%s\n", verb, about) }
	return forEachArg(fs, args, func(ctx context.Context, c *client.Client, id string) error {
		sb, err := do(c, ctx, id)
		if err == nil {
			fmt.Printf("%s\t%s\n", sb.ID, sb.State)
		}
		return err
	})
}

func forkCmd(args []string) error {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	n := fs.Int("n", 1, fmt.Sprintf("how many forks, 1 to %d", sandbox.MaxForks))
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock fork [-n N] ID\n\nCreate N sandboxes whose files are the sandbox's now (processes and memory\nare not copied) and print their ids.")
		fs.PrintDefaults()
	}
	ids, _, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return usageError(fs)
	}
	if *n < 1 || *n > sandbox.MaxForks {
		return fmt.Errorf("-n %d: want 1 to %d", *n, sandbox.MaxForks)
	}
	ctx, stop := remoteContext()
	defer stop()
	sbs, err := remote().ForkSandbox(ctx, ids[0], client.ForkRequest{Count: *n})
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		fmt.Println(sb.ID)
	}
	return nil
}
