package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/client"
)

const tenantsUsage = `Usage: airlock tenants create NAME [--max-sandboxes N] [--max-memory 4G]
       airlock tenants ls
       airlock tenants set NAME [--max-sandboxes N] [--max-memory SIZE]   (0 lifts a quota)

Manage tenants (admin key only).`

func tenantsCmd(args []string) error {
	return subcommand("tenants", tenantsUsage, args,
		verb{"create", tenantsCreate},
		verb{"ls", tenantsLs},
		verb{"set", tenantsSet},
	)
}

// tenantsSet changes the quotas given by flags; 0 lifts one.
func tenantsSet(args []string) error {
	fs, maxSandboxes, mem, pos, err := tenantFlags("set", "[--max-sandboxes N] [--max-memory SIZE]", args)
	if err != nil {
		return err
	}
	var q client.TenantQuota
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-sandboxes":
			q.MaxSandboxes = maxSandboxes
		case "max-memory":
			q.MaxMemoryMB = &mem.mb
		}
	})
	if q.MaxSandboxes == nil && q.MaxMemoryMB == nil {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().UpdateTenant(ctx, pos[0], q)
	if err != nil {
		return err
	}
	fmt.Printf("%s: max sandboxes %s, max memory %s\n", t.Name, limitCell(int64(t.MaxSandboxes), ""), limitCell(t.MaxMemoryMB, "M"))
	return nil
}

// tenantFlags parses the arguments of tenants VERB NAME with the quota
// flags (0: unlimited).
func tenantFlags(verb, usage string, args []string) (*flag.FlagSet, *int, *quotaSizeFlag, []string, error) {
	fs := flag.NewFlagSet("tenants "+verb, flag.ContinueOnError)
	mem := &quotaSizeFlag{}
	maxSandboxes := fs.Int("max-sandboxes", 0, "most sandboxes alive at once (0: unlimited)")
	fs.Var(mem, "max-memory", "most memory over its live sandboxes, e.g. 4G (0: unlimited)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: airlock tenants %s NAME %s\n", verb, usage)
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if len(pos) != 1 || *maxSandboxes < 0 {
		return nil, nil, nil, nil, usageError(fs)
	}
	return fs, maxSandboxes, mem, pos, nil
}

func tenantsCreate(args []string) error {
	_, maxSandboxes, mem, pos, err := tenantFlags("create", "[flags]", args)
	if err != nil {
		return err
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

// quotaSizeFlag is a size, or 0 for no limit.
type quotaSizeFlag struct{ sizeFlag }

func (q *quotaSizeFlag) Set(v string) error {
	if strings.TrimSpace(v) == "0" {
		q.mb = 0
		return nil
	}
	return q.sizeFlag.Set(v)
}
