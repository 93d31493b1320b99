package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/client"
)

func lsCmd(args []string) error {
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	meta := envFlags{}
	state := fs.String("state", "", "only sandboxes in this state (creating, running, paused, stopped, failed)")
	fs.Var(meta, "metadata", "only sandboxes labelled KEY=VALUE (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock ls [flags]\n\nList sandboxes.")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	tw := table("ID\tSTATE\tTEMPLATE\tNODE\tCREATED\tEXPIRES")
	opts := client.ListOptions{State: *state, Metadata: meta}
	for {
		page, err := c.ListSandboxes(ctx, opts)
		if err != nil {
			return err
		}
		for _, sb := range page.Sandboxes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sb.ID, sb.State, sb.Template, orDash(sb.Node), timeCell(sb.CreatedAt), timeCell(sb.ExpiresAt))
		}
		if page.Next == "" {
			return tw.Flush()
		}
		opts.After = page.Next
	}
}

// timeCell is a time in the table: local, to the second.
func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}
