package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

const volumeUsage = `Usage: airlock volume create|ls|rm

  airlock volume create [--size-mb N] [--node NODE] NAME   make an empty volume (a disk limit of its own)
  airlock volume ls                                        list the tenant's volumes
  airlock volume rm NAME...                                delete volumes and all they hold

Mount one at create: 'airlock create --volume NAME:/mnt/data[:ro]'.`

func volumeCmd(args []string) error {
	return subcommand("volume", volumeUsage, args,
		verb{"create", volumeCreate}, verb{"ls", volumeList}, verb{"rm", volumeRemove})
}

func volumeCreate(args []string) error {
	fs := flag.NewFlagSet("volume create", flag.ContinueOnError)
	size := fs.Int64("size-mb", 1024, fmt.Sprintf("its disk limit in MiB, 16 to %d", sandbox.MaxVolumeMB))
	node := fs.String("node", "", "the node to keep it on (default: the server's own host)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock volume create [--size-mb N] [--node NODE] NAME\n\nMake an empty volume.")
		fs.PrintDefaults()
	}
	names, _, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	v, err := remote().CreateVolume(ctx, names[0], *size, *node)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%d MiB\t%s\n", v.Name, v.SizeMB, v.Node)
	return nil
}

func volumeList(args []string) error {
	fs := flag.NewFlagSet("volume ls", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: airlock volume ls\n\nList the tenant's volumes.") }
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListVolumes(ctx)
	if err != nil {
		return err
	}
	tw := table("NAME\tSIZE\tNODE\tCREATED")
	for _, v := range list {
		fmt.Fprintf(tw, "%s\t%d MiB\t%s\t%s\n", v.Name, v.SizeMB, v.Node, timeCell(v.CreatedAt))
	}
	return tw.Flush()
}

func volumeRemove(args []string) error {
	fs := flag.NewFlagSet("volume rm", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock volume rm NAME...\n\nDelete volumes and all they hold.")
	}
	return forEachArg(fs, args, func(ctx context.Context, c *client.Client, name string) error {
		return c.DeleteVolume(ctx, name)
	})
}

// volumeFlags is create's --volume NAME:PATH[:ro], repeatable.
type volumeFlags []client.VolumeMount

func (v *volumeFlags) String() string { return "" }

func (v *volumeFlags) Set(s string) error {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Errorf("want NAME:PATH or NAME:PATH:ro, got %q", s)
	}
	*v = append(*v, client.VolumeMount{Name: parts[0], Path: parts[1], ReadOnly: len(parts) == 3 && parts[2] == "ro"})
	return nil
}
