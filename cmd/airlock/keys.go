package main

import (
	"flag"
	"fmt"
)

const keysUsage = `Usage: airlock keys create --tenant NAME [--name N]
       airlock keys ls
       airlock keys rm ID

Manage API keys (admin key only, but for ls). A new key is shown once.`

func keysCmd(args []string) error {
	return subcommand("keys", keysUsage, args,
		verb{"create", keysCreate},
		verb{"ls", keysLs},
		verb{"rm", keysRm},
	)
}

func keysCreate(args []string) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the key acts for (required)")
	name := fs.String("name", "", "what the key is for, to recognise it in keys ls")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock keys create --tenant NAME [--name N]\n\nCreate an API key and print it: it is shown only this once.")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *tenant == "" {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	k, err := remote().CreateKey(ctx, *tenant, *name)
	if err != nil {
		return err
	}
	fmt.Println(k.Key)
	return nil
}

func keysLs(args []string) error {
	fs := flag.NewFlagSet("keys ls", flag.ContinueOnError)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	keys, err := remote().ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := table("ID\tTENANT\tNAME\tCREATED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, timeCell(k.CreatedAt))
	}
	return tw.Flush()
}

func keysRm(args []string) error {
	fs := flag.NewFlagSet("keys rm", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: airlock keys rm ID") }
	arg, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	return remote().DeleteKey(ctx, arg)
}
