package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/client"
)

func createCmd(args []string) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	var mem, disk sizeFlag
	env, meta := envFlags{}, envFlags{}
	template := fs.String("template", "", "template to start from (default base)")
	fs.Var(&mem, "memory", "memory limit (e.g. 512M, 1G)")
	fs.Var(&disk, "disk", "writable disk limit (e.g. 1G)")
	cpus := fs.Float64("cpus", 0, "CPU quota in cores (default 1)")
	pids := fs.Int64("pids", 0, "maximum number of processes (default 256)")
	timeout := fs.Duration("timeout", 0, "destroy the sandbox after this long (default 5m, at most 24h)")
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	fs.Var(meta, "metadata", "label KEY=VALUE to find the sandbox by (repeatable)")
	workdir := fs.String("workdir", "", "working directory inside the sandbox (default /home/user)")
	var network networkFlags
	network.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock create [flags]\n\nCreate a sandbox on the server and print its id.")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	np, err := network.clientPolicy()
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	sb, err := remote().CreateSandbox(ctx, client.CreateRequest{
		Template: *template, CPUs: *cpus, MemoryMB: mem.mb, Pids: *pids, DiskMB: disk.mb,
		Timeout: *timeout, Env: env, Metadata: meta, Workdir: *workdir, Network: np, Secrets: network.secrets,
	})
	if err != nil {
		return err
	}
	fmt.Println(sb.ID)
	return nil
}
