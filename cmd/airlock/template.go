package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/codeinterp"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

const templateUsage = `Usage: airlock template build NAME [--from T] [--run CMD | --copy SRC:DST]... [--start CMD [--ready-port N]] [flags]
       airlock template build code-interpreter
       airlock template import NAME IMAGE|FILE [--credentials SECRET] [--allow HOST]... [--insecure]
       airlock template ls
       airlock template rm NAME

Templates are what sandboxes start from: base (the host's /usr), or one
built on it. A build runs its steps, in the order given, in a sandbox whose
/usr/local is writable, then saves /usr/local as the template (everything
else the build writes is dropped). A name built before from the same recipe
is not built again (--force rebuilds). Building and removing need an admin
key; every key can use them (airlock create --template NAME).

A template's start command (--start) runs in the background in every
sandbox made from it, which is handed out once it is ready (--ready-port
accepts connections, --ready-cmd exits 0). code-interpreter is built in:
the service E2B's Code Interpreter SDKs talk to, on port 49999 (the E2B
facade's code-interpreter-v1).

An import pulls an OCI or Docker image (registry/repo:tag) through the
server's egress proxy, or reads a 'docker save' or OCI layout tarball FILE,
and flattens its layers into a template with its own root filesystem.`

func templateCmd(args []string) error {
	return subcommand("template", templateUsage, args,
		verb{"build", templateBuild},
		verb{"import", templateImport},
		verb{"ls", templateLs},
		verb{"rm", templateRm},
	)
}

// stepsFlag collects --run and --copy in command-line order.
type stepsFlag struct {
	steps *[]client.BuildStep
	copy  bool
}

func (s stepsFlag) String() string { return "" }
func (s stepsFlag) Set(v string) error {
	if !s.copy {
		if strings.TrimSpace(v) == "" {
			return errors.New("empty command")
		}
		*s.steps = append(*s.steps, client.BuildStep{Run: v})
		return nil
	}
	src, dst, ok := strings.Cut(v, ":")
	if !ok || src == "" || !path.IsAbs(dst) {
		return errors.New("want LOCAL:/absolute/path/in/sandbox")
	}
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	*s.steps = append(*s.steps, client.BuildStep{Copy: &client.CopyStep{Src: src, Dst: dst}})
	return nil
}

func templateBuild(args []string) error {
	fs := flag.NewFlagSet("template build", flag.ContinueOnError)
	var steps []client.BuildStep
	fs.Var(stepsFlag{steps: &steps}, "run", "shell command to run as the sandbox user (repeatable)")
	fs.Var(stepsFlag{steps: &steps, copy: true}, "copy", "copy a local file or directory in: SRC:/path (repeatable)")
	from := fs.String("from", "base", "template to build on")
	desc := fs.String("description", "", "what the template is for")
	force := fs.Bool("force", false, "build even if the recipe has not changed")
	env := envFlags{}
	fs.Var(env, "env", "environment variable KEY=VALUE for the build (repeatable)")
	var lim limitFlags
	lim.register(fs, "the build's", runtime.Limits{CPUs: 1, MemoryMB: 2048, DiskMB: 4096})
	timeout := duration(fs, "timeout", 0, time.Second, sandbox.MaxTimeout, "give up on the build after `DURATION`, 1s to 24h (default 30m)")
	var network networkFlags
	network.register(fs)
	var start client.TemplateStart
	fs.StringVar(&start.Command, "start", "", "run `CMD` in the background in every sandbox made from the template")
	fs.IntVar(&start.ReadyPort, "ready-port", 0, "a sandbox is ready once `PORT` accepts connections (with --start)")
	fs.StringVar(&start.ReadyCommand, "ready-cmd", "", "a sandbox is ready once `CMD` exits 0 (with --start)")
	readyTimeout := duration(fs, "ready-timeout", 0, time.Second, runtime.MaxReadyTimeout, "fail a create whose start command is not ready after `DURATION`, 1s to 10m (default 1m)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock template build NAME [--from T] [--run CMD | --copy SRC:DST]... [--start CMD [--ready-port N]] [flags]\n"+
			"       airlock template build code-interpreter\n\n"+
			"Build a template: the steps run in order in a build sandbox, then its /usr/local is saved as NAME.\n"+
			"Example: airlock template build harness-codex --allow registry.npmjs.org --run 'npm install -g @openai/codex@0.169.0'")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	start.ReadyTimeoutS = int(*readyTimeout / time.Second)
	b := client.TemplateBuild{Steps: steps}
	if start != (client.TemplateStart{}) {
		if start.Command == "" {
			return errors.New("--ready-port, --ready-cmd and --ready-timeout go with --start")
		}
		b.Start = &start
	}
	if len(pos) == 1 && pos[0] == codeinterp.Template && len(steps) == 0 && b.Start == nil {
		dir, err := os.MkdirTemp("", "airlock-code-interpreter-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if b, err = codeinterp.Build(dir); err != nil {
			return err
		}
	}
	if len(pos) != 1 || len(b.Steps) == 0 && b.Start == nil {
		return usageError(fs)
	}
	if len(network.secrets) > 0 {
		return errors.New("--secret: a build cannot bind secrets (the template would not keep them anyway)")
	}
	np, err := network.clientPolicy()
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	l := lim.values()
	b.Name, b.From, b.Env, b.Network = pos[0], *from, env, np
	b.CPUs, b.MemoryMB, b.DiskMB, b.Timeout, b.Force = l.CPUs, l.MemoryMB, l.DiskMB, *timeout, *force
	if *desc != "" || b.Description == "" {
		b.Description = *desc
	}
	t, cached, err := remote().BuildTemplate(ctx, b, os.Stderr)
	if err != nil {
		return err
	}
	if cached {
		fmt.Fprintf(os.Stderr, "template %s is up to date (same recipe; --force rebuilds)\n", t.Name)
	} else {
		fmt.Fprintf(os.Stderr, "template %s saved: %s on %s\n", t.Name, bytesCell(t.SizeBytes), t.From)
	}
	fmt.Println(t.Name)
	return nil
}

func templateLs(args []string) error {
	fs := flag.NewFlagSet("template ls", flag.ContinueOnError)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	ts, err := remote().Templates(ctx)
	if err != nil {
		return err
	}
	// A server with nodes says which hold each template.
	withNodes := slices.ContainsFunc(ts, func(t client.Template) bool { return len(t.Nodes) > 0 })
	head := "NAME\tFROM\tSIZE\tCREATED\tDESCRIPTION"
	if withNodes {
		head = "NAME\tFROM\tSIZE\tCREATED\tNODES\tDESCRIPTION"
	}
	tw := table(head)
	for _, t := range ts {
		size, created := "-", "-"
		if t.Name != "base" {
			size, created = bytesCell(t.SizeBytes), timeCell(t.CreatedAt)
		}
		cells := []string{t.Name, t.From, size, created}
		if withNodes {
			cells = append(cells, cmp.Or(strings.Join(t.Nodes, ","), "-"))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, t.Description), "\t"))
	}
	return tw.Flush()
}

func templateRm(args []string) error {
	fs := flag.NewFlagSet("template rm", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Usage: airlock template rm NAME") }
	arg, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	return remote().DeleteTemplate(ctx, arg)
}
