package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

const snapshotUsage = `Usage: airlock snapshot create|ls|rm

  airlock snapshot create [--name NAME] ID   save a sandbox's files (workspace and all it wrote)
  airlock snapshot ls                        list the tenant's snapshots
  airlock snapshot rm NAME...                delete snapshots (sandboxes made from them keep their copy)

Start a sandbox from one with 'airlock create --snapshot NAME'.`

func snapshotCmd(args []string) error {
	return subcommand("snapshot", snapshotUsage, args,
		verb{"create", snapshotCreate}, verb{"ls", snapshotList}, verb{"rm", snapshotRemove})
}

func snapshotCreate(args []string) error {
	fs := flag.NewFlagSet("snapshot create", flag.ContinueOnError)
	name := fs.String("name", "", "the snapshot's name (default: the server picks one)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock snapshot create [--name NAME] ID\n\nSave the sandbox's files; it is frozen for the instant it takes.")
		fs.PrintDefaults()
	}
	ids, _, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	snap, err := remote().CreateSnapshot(ctx, ids[0], *name)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\n", snap.Name, sandbox.FormatBytes(snap.SizeBytes))
	return nil
}

func snapshotList(args []string) error {
	fs := flag.NewFlagSet("snapshot ls", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: airlock snapshot ls\n\nList the tenant's snapshots.") }
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListSnapshots(ctx)
	if err != nil {
		return err
	}
	tw := table("NAME\tSANDBOX\tTEMPLATE\tNODE\tSIZE\tCREATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Sandbox, s.Template, s.Node, sandbox.FormatBytes(s.SizeBytes), timeCell(s.CreatedAt))
	}
	return tw.Flush()
}

func snapshotRemove(args []string) error {
	fs := flag.NewFlagSet("snapshot rm", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: airlock snapshot rm NAME...\n\nDelete snapshots.") }
	return forEachArg(fs, args, func(ctx context.Context, c *client.Client, name string) error {
		return c.DeleteSnapshot(ctx, name)
	})
}
