package main

import (
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/client"
)

const tenantsUsage = `Usage: airlock tenants create NAME [--max-sandboxes N] [--max-memory 4G]
       airlock tenants ls

Manage tenants (admin key only).`

func tenantsCmd(args []string) error {
	return subcommand("tenants", tenantsUsage, args,
		verb{"create", tenantsCreate},
		verb{"ls", tenantsLs},
	)
}

func tenantsCreate(args []string) error {
	fs := flag.NewFlagSet("tenants create", flag.ContinueOnError)
	var mem sizeFlag
	maxSandboxes := fs.Int("max-sandboxes", 0, "most sandboxes alive at once (default unlimited)")
	fs.Var(&mem, "max-memory", "most memory over its live sandboxes, e.g. 4G (default unlimited)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock tenants create NAME [flags]")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *maxSandboxes < 0 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().CreateTenant(ctx, client.TenantRequest{Name: pos[0], MaxSandboxes: *maxSandboxes, MaxMemoryMB: mem.mb})
	if err != nil {
		return err
	}
	fmt.Println(t.ID)
	return nil
}

func tenantsLs(args []string) error {
	fs := flag.NewFlagSet("tenants ls", flag.ContinueOnError)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	tenants, err := remote().ListTenants(ctx)
	if err != nil {
		return err
	}
	tw := table("ID\tNAME\tMAX SANDBOXES\tMAX MEMORY\tCREATED")
	for _, t := range tenants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, limitCell(int64(t.MaxSandboxes), ""), limitCell(t.MaxMemoryMB, "M"), timeCell(t.CreatedAt))
	}
	return tw.Flush()
}

// limitCell shows 0 as "-": no limit.
func limitCell(n int64, unit string) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%s", n, unit)
}
