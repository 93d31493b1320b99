package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/client"
)

const approvalsUsage = `Usage: airlock approvals ls [--all] [--json]
       airlock approvals allow ID [--remember once|sandbox|task] [--reason TEXT]
       airlock approvals deny ID [--remember once|sandbox|task] [--reason TEXT]

Decide what a sandbox's network policy asks a person about ("ask"): the
connection waits until it is allowed, denied or times out. "ls" lists the
pending ones (--all: every state). --remember sandbox also puts the host
on that sandbox's allow list (allow) or deny list (deny), so that it is
not asked about again. Only API keys decide: a sandbox token cannot.`

func approvalsCmd(args []string) error {
	return subcommand("approvals", approvalsUsage, args,
		verb{"ls", approvalsLs},
		verb{"allow", func(a []string) error { return approvalsDecide("allow", a) }},
		verb{"deny", func(a []string) error { return approvalsDecide("deny", a) }},
	)
}

func approvalsLs(args []string) error {
	fs := flag.NewFlagSet("approvals ls", flag.ContinueOnError)
	all := fs.Bool("all", false, "every approval kept, not only the pending ones")
	asJSON := fs.Bool("json", false, "print each approval as a JSON line")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), approvalsUsage)
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	state := client.ApprovalPending
	if *all {
		state = ""
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListApprovals(ctx, state)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLines(list)
	}
	tw := table("ID\tSANDBOX\tKIND\tASKS\tSTATE\tREQUESTED\tDEADLINE")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.SandboxID, a.Kind, asks(a), a.State,
			timeCell(a.RequestedAt), timeCell(a.Deadline))
	}
	return tw.Flush()
}

// asks says what an approval asks, in a table cell: the connection, the
// command's text or the harness's tool (cut to a cell's width).
func asks(a client.Approval) string {
	switch {
	case a.Egress != nil:
		return a.Egress.Protocol + " " + net.JoinHostPort(a.Egress.Host, strconv.Itoa(a.Egress.Port))
	case a.Command != nil:
		return shorten(strings.Join(strings.Fields(a.Command.Text), " "), 48)
	case a.Harness != nil:
		return a.Harness.Harness + " " + a.Harness.Tool
	}
	return "-"
}

func approvalsDecide(decision string, args []string) error {
	fs := flag.NewFlagSet("approvals "+decision, flag.ContinueOnError)
	remember := fs.String("remember", "once", "once, sandbox (the sandbox's later connections too) or task")
	reason := fs.String("reason", "", "why, for the audit log")
	asJSON := fs.Bool("json", false, "print the decided approval as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), approvalsUsage)
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	a, err := remote().DecideApproval(ctx, pos[0], client.ApprovalDecision{Decision: decision, Remember: *remember, Reason: *reason})
	if err != nil {
		return err
	}
	if *asJSON {
		return jsonEncoder(os.Stdout).Encode(a)
	}
	fmt.Printf("%s %s (%s, remember %s)\n", a.ID, a.State, asks(a), a.Remember)
	return nil
}
