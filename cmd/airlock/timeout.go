package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func timeoutCmd(args []string) error {
	fs := flag.NewFlagSet("timeout", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock timeout ID DURATION\n\nMake a sandbox expire DURATION (1s to 24h) from now.\nA DURATION is "+durationSyntax+".")
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError(fs)
	}
	d, err := parseDuration(pos[1])
	if err == nil {
		err = checkDuration(pos[1], d, time.Second, sandbox.MaxTimeout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock timeout: %v\n", err)
		return exitError(2)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	sb, err := c.SetTimeout(ctx, pos[0], d)
	if err != nil {
		return sandboxErr(ctx, c, pos[0], err)
	}
	fmt.Printf("%s expires %s\n", sb.ID, timeCell(sb.ExpiresAt))
	return nil
}
