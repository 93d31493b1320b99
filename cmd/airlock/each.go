package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/client"
)

// forEachArg is a verb on one or more names or ids (pause, snapshot rm,
// volume rm): it goes on past a failure, so that one missing name does not
// spare the others, says which failed on stderr, and exits 1 if any did.
func forEachArg(fs *flag.FlagSet, args []string, do func(ctx context.Context, c *client.Client, arg string) error) error {
	names, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	failed := false
	for _, n := range names {
		if err := do(ctx, c, n); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: %s %s: %v\n", fs.Name(), n, explain(err))
			failed = true
		}
	}
	if failed {
		return exitError(1)
	}
	return nil
}
