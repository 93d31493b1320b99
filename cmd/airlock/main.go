// Command airlock is the one Airlock binary: the server, the CLI for it,
// the embedded one-shot runner, and (under a hidden argument) each sandbox's
// init. It only
// parses flags and wires packages together.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

const usage = `airlock: sandboxes for AI agents

Usage:
  airlock serve [--addr 127.0.0.1:7070] [--data-dir DIR] [--egress-dns HOST:PORT]
                                         run the server (REST API under /v1)
  airlock run [flags] -- CMD [ARGS...]   run a command in a new sandbox, then destroy it
  airlock doctor [--data-dir DIR]        report which protections this host enforces
  airlock bench spawn|api|egress         measure the runtime, the API, the egress proxy
  airlock teardown [--data-dir DIR]      destroy every sandbox of a data dir, unmount its disk pool
  airlock node --join URL --token T ...  run a node for a control plane (joins it, then heartbeats)
  airlock version                        print this binary's version and agent protocol

On a server ($AIRLOCK_URL, default http://127.0.0.1:7070) with the key
$AIRLOCK_API_KEY, else the admin.key in the data dir:
  airlock create [flags]                 create a sandbox, print its id
  airlock exec ID -- CMD [ARGS...]       run a command in a sandbox, stream its output
  airlock shell ID                       open an interactive shell in a sandbox
  airlock attach ID SESSION              attach this terminal to a session's terminal
  airlock ls [flags]                     list sandboxes
  airlock rm ID...                       destroy sandboxes
  airlock cp SRC DST                     copy a file in or out (ID:PATH; "-" is stdio)
  airlock timeout ID DURATION            make a sandbox expire DURATION from now
  airlock pause ID... / resume ID...     freeze a sandbox (memory kept, no CPU), thaw it
  airlock snapshot create|ls|rm          save a sandbox's files; 'create --snapshot NAME' starts from one
  airlock fork [-n N] ID                 N new sandboxes with the sandbox's files as they are now
  airlock volume create|ls|rm            volumes that outlive sandboxes; 'create --volume NAME:PATH'
  airlock tenants create|ls|set          manage tenants and their quotas (admin)
  airlock nodes token|ls|drain|undrain|rm  manage the nodes that joined (admin)
  airlock keys create|ls|rm              manage API keys
  airlock secrets set|ls|rm              manage secrets injected by the egress proxy
  airlock mcp [--data-dir DIR] [--embedded]  serve MCP on stdio (runs its own server if none answers)
  airlock events [--after ID|--all]      follow the tenant's events (lifecycle, exec exits)
  airlock webhooks add|ls|rm|deliveries  deliver events to a URL, signed and retried
  airlock approvals ls|allow ID|deny ID  decide what a sandbox's policy asks a person about
  airlock audit ID|verify|export         read, check or export a sandbox's audit log
  airlock replay [flags] ID [SESSION]    play back a session, a command (--exec) or a sandbox
  airlock metrics ID [--json]            what a sandbox used (live, or final once ended)
  airlock usage [--from T] [--to T] [--tenant ID] [--json]
                                         usage per tenant over sandboxes created in [from, to)
  airlock task run|ls|get|cancel         run an agent harness on a folder in a sandbox of its own
  airlock template build|ls|rm           build templates (a /usr/local layer on base), list them

The data dir (--data-dir, default $AIRLOCK_DATA_DIR or /var/lib/airlock as
root) holds the database, sandboxes and templates; --state-dir and
$AIRLOCK_STATE_DIR are its old names. Durations are Go's: numbers each
with a unit h, m, s, ms, us or ns (90s, 10m, 1h30m, 1.5h).

Run 'airlock COMMAND -h' or 'airlock help COMMAND' for a command's flags.
`

// commands are the verbs main dispatches on.
var commands = map[string]func(args []string) error{
	"serve": serveCmd, "run": runCmd, "doctor": doctorCmd, "bench": benchCmd,
	"create": createCmd, "exec": execCmd, "shell": shellCmd, "attach": attachCmd,
	"ls": lsCmd, "rm": rmCmd, "cp": cpCmd, "timeout": timeoutCmd,
	"tenants": tenantsCmd, "secrets": secretsCmd, "keys": keysCmd, "node": nodeCmd, "nodes": nodesCmd,
	"audit": auditCmd, "replay": replayCmd, "events": eventsCmd, "webhooks": webhooksCmd,
	"approvals": approvalsCmd, "metrics": metricsCmd, "usage": usageCmd, "task": taskCmd, "template": templateCmd,
	"pause": pauseCmd, "resume": resumeCmd, "fork": forkCmd, "snapshot": snapshotCmd, "volume": volumeCmd,
	"mcp": mcpCmd, "teardown": teardownCmd, "version": versionCmd,
}

func main() {
	// A binary built without the embedded init is its own (see
	// initbin): slower, but it works.
	if len(os.Args) > 1 && os.Args[1] == sbinit.Arg {
		sbinit.Main()
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	verb, args := os.Args[1], os.Args[2:]
	switch verb {
	case "-h", "--help", "help":
		if len(args) == 0 {
			fmt.Print(usage)
			return
		}
		// help VERB [SUBVERB]: the verb's own help.
		verb, args = args[0], append(args[1:], "--help")
	}
	cmd, ok := commands[verb]
	if !ok {
		fmt.Fprintf(os.Stderr, "airlock: unknown command %q\n\n%s", verb, usage)
		os.Exit(2)
	}
	err := cmd(args)
	if err != nil {
		if e, ok := err.(exitError); ok {
			os.Exit(int(e))
		}
		fmt.Fprintf(os.Stderr, "airlock: %v\n", explain(err))
		os.Exit(1)
	}
}

// exitError carries an exit code through main without printing anything.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// defaultDataDir is $AIRLOCK_DATA_DIR (or its old name
// $AIRLOCK_STATE_DIR), else /var/lib/airlock for root and the XDG data
// dir for others.
func defaultDataDir() string {
	if d := dataDirEnv(); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/airlock"
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "airlock")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "airlock")
}

// dataDirEnv is $AIRLOCK_DATA_DIR, or $AIRLOCK_STATE_DIR, its old name.
func dataDirEnv() string {
	if d := os.Getenv("AIRLOCK_DATA_DIR"); d != "" {
		return d
	}
	return os.Getenv("AIRLOCK_STATE_DIR")
}

// verb is one subcommand of a command group (airlock keys create ...).
type verb struct {
	name string
	run  func(args []string) error
}

// subcommand runs the verb that args name within group: no verb prints
// usage and exits 2, help prints it and succeeds, an unknown verb says so
// and exits 2.
func subcommand(group, usage string, args []string, verbs ...verb) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return exitError(2)
	}
	for _, v := range verbs {
		if v.name == args[0] {
			return v.run(args[1:])
		}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Println(usage)
		return nil
	}
	fmt.Fprintf(os.Stderr, "airlock: unknown %s command %q\n%s\n", group, args[0], usage)
	return exitError(2)
}
