package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func createCmd(args []string) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	var lim limitFlags
	lim.register(fs, "", runtime.DefaultLimits)
	env, meta := envFlags{}, envFlags{}
	template := fs.String("template", "", "template to start from (default base)")
	timeout := duration(fs, "timeout", 0, time.Second, sandbox.MaxTimeout, "destroy the sandbox after `DURATION`, 1s to 24h (default 5m)")
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	fs.Var(meta, "metadata", "label KEY=VALUE to find the sandbox by (repeatable)")
	workdir := fs.String("workdir", "", "working directory inside the sandbox (default /home/user)")
	var network networkFlags
	network.register(fs)
	snapshot := fs.String("snapshot", "", "start from this snapshot's files (and its template)")
	autoResume := fs.Bool("auto-resume", false, "resume the sandbox, while paused, on any call that needs it running")
	idle := duration(fs, "idle-timeout", 0, time.Second, sandbox.MaxTimeout, "act after `DURATION` without use (see --idle-action)")
	idleAction := fs.String("idle-action", "", "what --idle-timeout does: destroy (default) or pause")
	var vols volumeFlags
	fs.Var(&vols, "volume", "mount a volume, `NAME:PATH[:ro]` (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock create [flags]\n\nCreate a sandbox on the server and print its id.\nA DURATION is "+durationSyntax+".")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	np, err := network.clientPolicy()
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	l := lim.values()
	sb, err := remote().CreateSandbox(ctx, client.CreateRequest{
		Template: *template, CPUs: l.CPUs, MemoryMB: l.MemoryMB, Pids: l.Pids, DiskMB: l.DiskMB,
		Timeout: *timeout, Env: env, Metadata: meta, Workdir: *workdir, Network: np, Secrets: network.secrets,
		Snapshot: *snapshot, AutoResume: *autoResume, IdleTimeoutS: int64(idle.Seconds()), IdleAction: *idleAction,
		Volumes: vols,
	})
	if err != nil {
		return err
	}
	fmt.Println(sb.ID)
	return nil
}
