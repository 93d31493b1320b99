package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

const taskUsage = `Usage: airlock task run --harness H [--command CMD] [--prompt P] [--allow HOST]... [--secret NAME]...
                        [--env K=V]... [--model M] [--base-url URL] [--artifact GLOB]... [--timeout 10m] [--out DIR] [--json]
                        [--budget-usd USD] [--budget-tokens N] [--retry N] [--approve TOOLS] [DIR | --git URL [--ref REF]]
       airlock task ls [--state S] [--harness H]
       airlock task harnesses
       airlock task get ID
       airlock task cancel ID...

run submits a task (DIR, .git left out, packed as a tar archive, or the
repository --git names, cloned in the sandbox, becomes its workspace),
streams its events, and writes its artifacts and workspace.diff to --out
(default ./airlock-task-ID; it says where). Harness generic runs --command
(a shell command line) with the prompt on stdin and in $AIRLOCK_TASK_PROMPT.
A DURATION (--timeout) is ` + durationSyntax + `.
--budget-usd and --budget-tokens cap what its model calls may spend (once
spent, further calls are refused and the task fails); --retry N tries it
again in a new sandbox after an infrastructure failure. --approve (claude,
codex) makes its shell, write or network tool calls, or all, wait for a person
(airlock approvals ls, allow ID, deny ID); in any task, airlock-approve
"what I want to do" asks one. get and ls show the
tokens its model calls used, counted at the egress proxy, and its cost.
harnesses lists the harnesses, their pinned versions, and whether this
server has each one's template (and how an admin builds it).

run exits with
  0    the task succeeded
  N    it failed, and the harness exited with status N (1 to 255)
  1    it failed otherwise, or the server refused it or could not be reached
  2    bad usage: an unknown flag, a value out of range, no such DIR (nothing is submitted)
  124  the harness ran past --timeout
  130  the task was cancelled (Ctrl-C cancels it, as does 'airlock task cancel')`

// maxUpload bounds the packed directory task run sends (the server takes
// a 32 MiB tarball).
const maxUpload = 32 << 20

func taskCmd(args []string) error {
	return subcommand("task", taskUsage, args,
		verb{"run", taskRun},
		verb{"ls", taskLs},
		verb{"harnesses", taskHarnesses},
		verb{"get", taskGet},
		verb{"cancel", taskCancel},
	)
}

func taskRun(args []string) error {
	f := flag.NewFlagSet("task run", flag.ContinueOnError)
	harness := f.String("harness", "generic", "generic, codex, claude, opencode, qwen, gemini, cline or pi (airlock task harnesses)")
	command := f.String("command", "", "the generic harness's command line (run with sh -c)")
	prompt := f.String("prompt", "", "the task's prompt")
	timeout := duration(f, "timeout", 10*time.Minute, time.Second, sandbox.MaxTimeout, "how long (`DURATION`) the harness may run, 1s to 24h")
	out := f.String("out", "", "write the artifacts and workspace.diff into this directory (default ./airlock-task-ID)")
	asJSON := f.Bool("json", false, "print the events as JSON lines")
	gitURL := f.String("git", "", "clone this http(s) repository into the workspace (its host must be allowed)")
	gitRef := f.String("ref", "", "with --git: the branch, tag or commit to check out")
	var allow, secrets, artifacts listFlag
	f.Var(&allow, "allow", "egress allow-list pattern (repeatable)")
	f.Var(&secrets, "secret", "tenant secret to bind (repeatable)")
	f.Var(&artifacts, "artifact", "workspace glob of files to keep (repeatable; default: the files the task added or changed)")
	env := envFlags{}
	f.Var(env, "env", "environment variable KEY=VALUE for the harness (repeatable; stored sealed)")
	model := f.String("model", "", "the model the harness asks for (default: the harness's own)")
	baseURL := f.String("base-url", "", "the model API's base URL, for a provider other than the harness's (its host must be allowed or a bound secret's)")
	spend := addSpendFlags(f)
	approve := f.String("approve", "", "claude and codex: tool calls that wait for a person (airlock approvals ls/allow/deny): `TOOLS` shell,write,network or all")
	f.Usage = func() {
		fmt.Fprintln(f.Output(), taskUsage)
		f.PrintDefaults()
	}
	pos, _, err := parseArgs(f, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError(f)
	}
	req := client.TaskRequest{Harness: *harness, Prompt: *prompt, Allow: allow, Secrets: secrets,
		Artifacts: artifacts, TimeoutS: int64((*timeout + time.Second - 1) / time.Second)}
	if *command != "" {
		req.Command = []string{"sh", "-c", *command}
	}
	if len(env) > 0 {
		req.Env = env
	}
	if *model != "" || *baseURL != "" {
		req.Model = &client.TaskModel{Name: *model, BaseURL: *baseURL}
	}
	if err := spend.apply(f, &req); err != nil {
		return err
	}
	if *approve != "" {
		req.Approval = &client.TaskApproval{All: *approve == "all"}
		if !req.Approval.All {
			for _, t := range strings.Split(*approve, ",") {
				if t = strings.TrimSpace(t); t != "shell" && t != "write" && t != "network" {
					return badInput("task run", "--approve %q: want shell, write, network (comma-separated) or all", t)
				}
				req.Approval.Tools = append(req.Approval.Tools, strings.TrimSpace(t))
			}
		}
	}
	switch {
	case len(pos) == 1 && *gitURL != "":
		return badInput("task run", "give a directory or --git, not both")
	case len(pos) == 1:
		tarball, err := tarTree(pos[0])
		if err != nil {
			return badInput("task run", "%v", err)
		}
		req.Repo = &client.TaskRepo{Tarball: tarball}
	case *gitURL != "":
		req.Repo = &client.TaskRepo{Git: &client.GitRepo{URL: *gitURL, Ref: *gitRef}}
	case *gitRef != "":
		return badInput("task run", "--ref needs --git")
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	t, err := c.CreateTask(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "airlock: task %s %s\n", t.ID, t.State)
	_, err = c.FollowTask(ctx, t.ID, 0, func(e client.TaskEvent) error {
		printTaskEvent(e, *asJSON)
		return nil
	})
	if ctx.Err() != nil {
		// Interrupted: the task must not run on unwatched.
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if t, err = c.CancelTask(cctx, t.ID); err != nil {
			return fmt.Errorf("cancel task %s: %w", t.ID, err)
		}
		fmt.Fprintf(os.Stderr, "airlock: task %s %s\n", t.ID, t.State)
		return exitError(130)
	}
	if err != nil {
		return err
	}
	if t, err = c.GetTask(ctx, t.ID); err != nil {
		return err
	}
	if line := spendLine(t.Usage, t.CostUSD); line != "" && !*asJSON {
		fmt.Fprintf(os.Stderr, "airlock: %s\n", line)
	}
	dir := *out
	if dir == "" {
		// The id is the server's: one that names another place ("../x")
		// must not choose where files land.
		if dir = "airlock-task-" + t.ID; !filepath.IsLocal(dir) || strings.ContainsAny(t.ID, `/\`) {
			return fmt.Errorf("task id %q cannot name a directory; give --out", t.ID)
		}
	}
	if err := writeArtifacts(ctx, c, t.ID, dir); err != nil {
		return err
	}
	return taskExit(t)
}

// taskExit maps a task's end onto the CLI's exit status.
func taskExit(t client.Task) error {
	switch t.State {
	case client.TaskSucceeded:
		return nil
	case client.TaskTimedOut:
		return exitError(124)
	case client.TaskCancelled:
		return exitError(130)
	}
	if t.ExitCode != nil && *t.ExitCode > 0 && *t.ExitCode < 256 {
		return exitError(*t.ExitCode)
	}
	return exitError(1)
}

// tarTree packs dir (its .git directories left out) as a gzip-compressed
// tar archive for the task's workspace: files with their modes, and
// symlinks as they are.
func tarTree(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !info.Mode().IsRegular() && !info.IsDir():
			fmt.Fprintf(os.Stderr, "airlock: %s left out: not a file, directory or symlink\n", rel)
			return nil
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		if buf.Len() > maxUpload {
			return fmt.Errorf("%s packs to over %d MiB", dir, maxUpload>>20)
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil && buf.Len() > maxUpload {
		err = fmt.Errorf("%s packs to over %d MiB", dir, maxUpload>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// writeArtifacts saves the task's artifacts under dir (by their
// workspace paths) and its diff as dir/workspace.diff, and says so on
// stderr. A task that kept nothing makes no directory.
func writeArtifacts(ctx context.Context, c *client.Client, id, dir string) error {
	list, err := c.TaskArtifacts(ctx, id)
	if err != nil {
		return err
	}
	if len(list.Artifacts) == 0 && list.Diff == nil {
		fmt.Fprintf(os.Stderr, "airlock: task %s kept no artifacts and no diff\n", id)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if list.Diff != nil {
		if err := os.WriteFile(filepath.Join(dir, "workspace.diff"), []byte(list.Diff.Text), 0o644); err != nil {
			return err
		}
	}
	for _, a := range list.Artifacts {
		// The server names files inside the workspace; a name that is not
		// local would write outside dir.
		if !filepath.IsLocal(filepath.FromSlash(a.Path)) {
			return fmt.Errorf("artifact %q: not a relative path", a.Path)
		}
		p := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		fh, err := os.Create(p)
		if err != nil {
			return err
		}
		n, err := c.ReadTaskArtifact(ctx, id, a.Path, fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if a.Truncated {
			fmt.Fprintf(os.Stderr, "airlock: %s kept in part: %d of %s\n", a.Path, n, plural(a.Size, "byte"))
		}
	}
	what := plural(int64(len(list.Artifacts)), "artifact")
	if list.Diff != nil {
		what += " and workspace.diff"
	}
	fmt.Fprintf(os.Stderr, "airlock: %s written to %s\n", what, dir)
	return nil
}

func printTaskEvent(e client.TaskEvent, asJSON bool) {
	if asJSON {
		b, _ := marshalJSON(e)
		fmt.Println(string(b))
		return
	}
	switch e.Type {
	case "task.started":
		fmt.Fprintf(os.Stderr, "airlock: started (%s) in sandbox %s\n", e.Harness, e.SandboxID)
	case "message":
		fmt.Printf("[%s] %s\n", e.Role, e.Text)
	case "tool_call":
		fmt.Printf("-> %s %s\n", e.Name, unescapeHTML(e.Input))
	case "tool_result":
		status := ""
		if e.IsError {
			status = " (error)"
		}
		fmt.Printf("<- %s%s %s\n", e.Name, status, firstLine(e.Output))
	case "command":
		code := "?"
		if e.ExitCode != nil {
			code = fmt.Sprint(*e.ExitCode)
		}
		fmt.Printf("$ %s (exit %s)\n", strings.Join(e.Argv, " "), code)
	case "file_change":
		fmt.Printf("%s %s\n", e.Kind, e.Path)
	case "usage":
		if e.Call != nil {
			fmt.Fprintf(os.Stderr, "airlock: %s\n", callLine(e.Call))
			break
		}
		fmt.Printf("tokens: %d in, %d out\n", e.InputTokens, e.OutputTokens)
	case "budget":
		fmt.Fprintf(os.Stderr, "airlock: budget spent: %s\n", e.Reason)
	case "attempt":
		fmt.Fprintf(os.Stderr, "airlock: attempt %d, after: %s\n", e.Attempt, e.Reason)
	case "raw":
		fmt.Fprintf(os.Stderr, "| %s\n", e.Line)
	case "task.finished":
		fmt.Fprintf(os.Stderr, "airlock: %s: %s\n", e.Status, e.Summary)
	}
}

func firstLine(s string) string {
	line, _, more := strings.Cut(s, "\n")
	if more {
		line += " ..."
	}
	return line
}

func taskLs(args []string) error {
	f := flag.NewFlagSet("task ls", flag.ContinueOnError)
	state := f.String("state", "", "only tasks in these states (comma-separated)")
	harness := f.String("harness", "", "only tasks of this harness")
	if err := noArgs(f, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	opts := client.TaskListOptions{Harness: *harness}
	if *state != "" {
		opts.States = strings.Split(*state, ",")
	}
	tw := table("ID\tSTATE\tHARNESS\tSANDBOX\tCREATED\tTOKENS\tCOST\tSUMMARY")
	for {
		p, err := c.ListTasks(ctx, opts)
		if err != nil {
			return err
		}
		for _, t := range p.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.State, t.Harness, t.SandboxID,
				t.CreatedAt.Local().Format(time.DateTime), tokensCell(t.Usage.ModelTotals), costCell(t.CostUSD), firstLine(t.Summary))
		}
		if p.Next == "" {
			break
		}
		opts.After = p.Next
	}
	return tw.Flush()
}

func taskHarnesses(args []string) error {
	f := flag.NewFlagSet("task harnesses", flag.ContinueOnError)
	if err := noArgs(f, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	hs, err := remote().Harnesses(ctx)
	if err != nil {
		return err
	}
	tw := table("HARNESS\tVERSION\tTEMPLATE\tBUILT\tKEY\tPACKAGE")
	var missing []client.Harness
	for _, h := range hs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", h.Name, orDash(h.Version), h.Template, h.Built, orDash(h.KeyEnv), orDash(h.Package))
		if !h.Built && h.BuildHint != "" {
			missing = append(missing, h)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range missing {
		fmt.Printf("build %s's template (admin): %s\n", h.Name, h.BuildHint)
	}
	return nil
}

func taskGet(args []string) error {
	f := flag.NewFlagSet("task get", flag.ContinueOnError)
	pos, _, err := parseArgs(f, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(f)
	}
	ctx, stop := remoteContext()
	defer stop()
	t, err := remote().GetTask(ctx, pos[0])
	if err != nil {
		return err
	}
	enc := jsonEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

func taskCancel(args []string) error {
	f := flag.NewFlagSet("task cancel", flag.ContinueOnError)
	pos, _, err := parseArgs(f, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(f)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	var errs []error
	for _, id := range pos {
		t, err := c.CancelTask(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		fmt.Printf("%s %s\n", t.ID, t.State)
	}
	return errors.Join(errs...)
}
