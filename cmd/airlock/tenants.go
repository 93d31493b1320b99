package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/client"
)

const tenantsUsage = `Usage: airlock tenants create NAME [--max-sandboxes N] [--max-memory 4G] [--max-storage 2G]
       airlock tenants ls
       airlock tenants set NAME [--max-sandboxes N] [--max-memory SIZE] [--max-storage SIZE]   (0 lifts a quota)

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
	tf, err := tenantFlags("set", "[--max-sandboxes N] [--max-memory SIZE] [--max-storage SIZE]", args)
	if err != nil {
		return err
	}
	var q client.TenantQuota
	tf.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-sandboxes":
			q.MaxSandboxes = tf.maxSandboxes
		case "max-memory":
			q.MaxMemoryMB = &tf.mem.mb
		case "max-storage":
			q.MaxStorageMB = &tf.storage.mb
		}
	})
	if q.MaxSandboxes == nil && q.MaxMemoryMB == nil && q.MaxStorageMB == nil {
		return usageError(tf.fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().UpdateTenant(ctx, tf.name, q)
	if err != nil {
		return err
	}
	fmt.Printf("%s: max sandboxes %s, max memory %s, max storage %s\n", t.Name, limitCell(int64(t.MaxSandboxes), ""),
		limitCell(t.MaxMemoryMB, "M"), limitCell(t.MaxStorageMB, "M"))
	return nil
}

// tenantQuotaFlags are the arguments of tenants VERB NAME.
type tenantQuotaFlags struct {
	fs           *flag.FlagSet
	name         string
	maxSandboxes *int
	mem, storage *quotaSizeFlag
}

// tenantFlags parses the arguments of tenants VERB NAME with the quota
// flags (0: unlimited).
func tenantFlags(verb, usage string, args []string) (tenantQuotaFlags, error) {
	fs := flag.NewFlagSet("tenants "+verb, flag.ContinueOnError)
	tf := tenantQuotaFlags{fs: fs, mem: &quotaSizeFlag{}, storage: &quotaSizeFlag{}}
	tf.maxSandboxes = fs.Int("max-sandboxes", 0, "most sandboxes alive at once (0: unlimited)")
	fs.Var(tf.mem, "max-memory", "most memory over its live sandboxes, e.g. 4G (0: unlimited)")
	fs.Var(tf.storage, "max-storage", "most the server keeps for it (audit and network logs, events, tasks), e.g. 2G; default 2G (0: unlimited)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: airlock tenants %s NAME %s\n", verb, usage)
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return tf, err
	}
	if len(pos) != 1 || *tf.maxSandboxes < 0 {
		return tf, usageError(fs)
	}
	tf.name = pos[0]
	return tf, nil
}

func tenantsCreate(args []string) error {
	tf, err := tenantFlags("create", "[flags]", args)
	if err != nil {
		return err
	}
	req := client.TenantRequest{Name: tf.name, MaxSandboxes: *tf.maxSandboxes, MaxMemoryMB: tf.mem.mb}
	tf.fs.Visit(func(f *flag.Flag) {
		if f.Name == "max-storage" {
			req.MaxStorageMB = &tf.storage.mb
		}
	})
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().CreateTenant(ctx, req)
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
	tw := table("ID\tNAME\tMAX SANDBOXES\tMAX MEMORY\tMAX STORAGE\tCREATED")
	for _, t := range tenants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, limitCell(int64(t.MaxSandboxes), ""), limitCell(t.MaxMemoryMB, "M"),
			limitCell(t.MaxStorageMB, "M"), timeCell(t.CreatedAt))
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
