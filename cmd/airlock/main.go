// Command airlock is the one Airlock binary: the server, the CLI for it,
// the embedded one-shot runner, and (under a hidden argument) each sandbox's
// init. It only
// parses flags and wires packages together.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime/linux"
)

const usage = `airlock: sandboxes for AI agents

Usage:
  airlock serve [--addr 127.0.0.1:7070] [--data-dir DIR] [--egress-dns HOST:PORT]
                                         run the server (REST API under /v1)
  airlock run [flags] -- CMD [ARGS...]   run a command in a new sandbox, then destroy it
  airlock doctor                         report which protections this host enforces
  airlock bench spawn|api|egress         measure the runtime, the API, the egress proxy
  airlock teardown [--data-dir DIR]      destroy every sandbox of a data dir, unmount its disk pool

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
  airlock tenants create|ls|set          manage tenants and their quotas (admin)
  airlock keys create|ls|rm              manage API keys
  airlock secrets set|ls|rm              manage secrets injected by the egress proxy
  airlock mcp [--data-dir DIR] [--embedded]  serve MCP on stdio (runs its own server if none answers)
  airlock events [--after ID|--all]      follow the tenant's events (lifecycle, exec exits)
  airlock webhooks add|ls|rm|deliveries  deliver events to a URL, signed and retried
  airlock audit ID|verify|export         read, check or export a sandbox's audit log
  airlock replay [flags] ID [SESSION]    play back a session, a command (--exec) or a sandbox
  airlock metrics ID [--json]            what a sandbox used (live, or final once ended)
  airlock usage [--from T] [--to T] [--tenant ID] [--json]
                                         usage per tenant over sandboxes created in [from, to)
  airlock task run|ls|get|cancel         run an agent harness on a folder in a sandbox of its own
  airlock template build|ls|rm           build templates (a /usr/local layer on base), list them

Run 'airlock COMMAND -h' for a command's flags.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == linux.InitArg {
		linux.InitMain()
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:])
	case "doctor":
		err = doctorCmd(os.Args[2:])
	case "bench":
		err = benchCmd(os.Args[2:])
	case "create":
		err = createCmd(os.Args[2:])
	case "exec":
		err = execCmd(os.Args[2:])
	case "shell":
		err = shellCmd(os.Args[2:])
	case "attach":
		err = attachCmd(os.Args[2:])
	case "ls":
		err = lsCmd(os.Args[2:])
	case "rm":
		err = rmCmd(os.Args[2:])
	case "cp":
		err = cpCmd(os.Args[2:])
	case "timeout":
		err = timeoutCmd(os.Args[2:])
	case "tenants":
		err = tenantsCmd(os.Args[2:])
	case "secrets":
		err = secretsCmd(os.Args[2:])
	case "keys":
		err = keysCmd(os.Args[2:])
	case "audit":
		err = auditCmd(os.Args[2:])
	case "replay":
		err = replayCmd(os.Args[2:])
	case "events":
		err = eventsCmd(os.Args[2:])
	case "webhooks":
		err = webhooksCmd(os.Args[2:])
	case "metrics":
		err = metricsCmd(os.Args[2:])
	case "usage":
		err = usageCmd(os.Args[2:])
	case "task":
		err = taskCmd(os.Args[2:])
	case "template":
		err = templateCmd(os.Args[2:])
	case "mcp":
		err = mcpCmd(os.Args[2:])
	case "teardown":
		err = teardownCmd(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "airlock: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		if e, ok := err.(exitError); ok {
			os.Exit(int(e))
		}
		fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
		os.Exit(1)
	}
}

// exitError carries an exit code through main without printing anything.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// defaultStateDir is /var/lib/airlock for root, the XDG data dir otherwise.
func defaultStateDir() string {
	if d := os.Getenv("AIRLOCK_STATE_DIR"); d != "" {
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
