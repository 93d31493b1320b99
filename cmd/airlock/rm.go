package main

import (
	"flag"
	"fmt"
	"os"
)

func rmCmd(args []string) error {
	fs := flag.NewFlagSet("rm", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock rm ID...\n\nDestroy sandboxes.")
	}
	ids, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	// Go on past a failure: one missing sandbox must not keep the others
	// alive.
	var failed bool
	for _, id := range ids {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: rm %s: %v\n", id, err)
			failed = true
		}
	}
	if failed {
		return exitError(1)
	}
	return nil
}
