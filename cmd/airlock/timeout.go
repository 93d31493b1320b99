package main

import (
	"flag"
	"fmt"
	"time"
)

func timeoutCmd(args []string) error {
	fs := flag.NewFlagSet("timeout", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock timeout ID DURATION\n\nMake a sandbox expire DURATION (e.g. 10m, at most 24h) from now.")
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError(fs)
	}
	d, err := time.ParseDuration(pos[1])
	if err != nil || d <= 0 {
		fmt.Fprintf(fs.Output(), "airlock: bad duration %q: want e.g. 10m\n", pos[1])
		return exitError(2)
	}
	ctx, stop := remoteContext()
	defer stop()
	sb, err := remote().SetTimeout(ctx, pos[0], d)
	if err != nil {
		return err
	}
	fmt.Printf("%s expires %s\n", sb.ID, timeCell(sb.ExpiresAt))
	return nil
}
