package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

const nodesUsage = `Usage: airlock nodes token [--ttl DURATION]
       airlock nodes ls [--json]
       airlock nodes drain NAME
       airlock nodes undrain NAME
       airlock nodes rm NAME [--force]

Manage the nodes that run sandboxes for this control plane (admin key only).
token mints a one-time join token and prints the airlock node command that
uses it; drain places no new sandboxes on a node (across its restarts,
until undrain); rm forgets one, refused while it holds sandboxes unless
--force.`

func nodesCmd(args []string) error {
	return subcommand("nodes", nodesUsage, args,
		verb{"token", nodesToken},
		verb{"ls", nodesLs},
		verb{"drain", func(args []string) error { return nodesDrain("drain", args, true) }},
		verb{"undrain", func(args []string) error { return nodesDrain("undrain", args, false) }},
		verb{"rm", nodesRm},
	)
}

func nodesToken(args []string) error {
	fs := flag.NewFlagSet("nodes token", flag.ContinueOnError)
	var ttl time.Duration
	durationVar(fs, &ttl, "ttl", time.Hour, time.Minute, 7*24*time.Hour, "how long (`DURATION`) the token may be used, once")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().CreateJoinToken(ctx, ttl)
	if err != nil {
		return err
	}
	fmt.Println(t.Token)
	fmt.Fprintf(os.Stderr, "airlock: valid once, until %s. On the node's host:\n  airlock node --join %s --token %s --ca-hash %s --data-dir DIR --addr HOST:PORT\n",
		t.ExpiresAt.Local().Format(time.RFC3339), serverURL(), t.Token, t.CAHash)
	return nil
}

func nodesLs(args []string) error {
	fs := flag.NewFlagSet("nodes ls", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the nodes as JSON")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListNodes(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []client.Node{}
		}
		return jsonEncoder(os.Stdout).Encode(list)
	}
	tw := table("NAME\tSTATE\tADDR\tVERSION\tSANDBOXES\tCPUS\tMEMORY\tDISK\tLAST HEARTBEAT")
	for _, n := range list {
		beat := "-"
		if n.LastHeartbeat != nil {
			beat = timeCell(*n.LastHeartbeat)
		}
		state := n.State
		if n.LastError != "" && n.State != "ready" {
			state += " (" + shorten(n.LastError, 60) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%.1f/%d\t%d/%dM\t%d/%dM\t%s\n", n.Name, state, n.Addr, orDash(n.Version),
			n.Use.Sandboxes, n.Capacity.Sandboxes, n.Use.CPUs, n.Capacity.CPUs, n.Use.MemoryMB, n.Capacity.MemoryMB,
			n.Use.DiskMB, n.Capacity.DiskMB, beat)
	}
	return tw.Flush()
}

func nodesDrain(verbName string, args []string, drain bool) error {
	fs := flag.NewFlagSet("nodes "+verbName, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "Usage: airlock nodes %s NAME\n", verbName) }
	name, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	n, err := remote().DrainNode(ctx, name, drain)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", n.Name, n.State)
	return nil
}

func nodesRm(args []string) error {
	fs := flag.NewFlagSet("nodes rm", flag.ContinueOnError)
	force := fs.Bool("force", false, "forget the node even while it holds sandboxes")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock nodes rm NAME [--force]")
		printFlags(fs)
	}
	name, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	return remote().RemoveNode(ctx, name, *force)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shorten cuts s to n runes, with an ellipsis.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
