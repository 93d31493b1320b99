package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/airlockhq/airlock/client"
)

const defaultURL = "http://127.0.0.1:7070"

// remote is a client of the server at $AIRLOCK_URL that authenticates with
// $AIRLOCK_API_KEY, or else with the admin key the server wrote into its
// data dir (readable on the server's host, by its user).
func remote() *client.Client {
	key, from := apiKey()
	keyFrom = from
	return client.New(serverURL(), key)
}

// keyFrom is where remote found its key, for explain: "$AIRLOCK_API_KEY",
// the admin.key path, or "" when there was none.
var keyFrom string

func serverURL() string {
	if u := os.Getenv("AIRLOCK_URL"); u != "" {
		return u
	}
	return defaultURL
}

// apiKey is $AIRLOCK_API_KEY, or the admin key in the data dir.
func apiKey() (key, from string) {
	if k := os.Getenv("AIRLOCK_API_KEY"); k != "" {
		return k, "$AIRLOCK_API_KEY"
	}
	p := filepath.Join(defaultDataDir(), "admin.key")
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), p
	}
	return "", ""
}

// remoteContext ends with SIGINT or SIGTERM, so that an interrupted call
// cancels its request instead of leaving it to run.
func remoteContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// parseArgs parses fs's flags wherever they come among the first n
// positional arguments (n < 0: all of them) and returns those positionals
// and what follows them or "--". -h ends the command with status 0, a bad
// flag with status 2 (see parseFlags).
func parseArgs(fs *flag.FlagSet, args []string, n int) (pos, rest []string, err error) {
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, nil, err
		}
		left := fs.Args()
		if k := len(args) - len(left); k > 0 && args[k-1] == "--" || len(left) == 0 || len(pos) == n {
			if n < 0 {
				return append(pos, left...), nil, nil
			}
			return pos, left, nil
		}
		pos, args = append(pos, left[0]), left[1:]
	}
}

// usageError prints fs's usage and ends the command with status 2.
func usageError(fs *flag.FlagSet) error {
	fs.Usage()
	return exitError(2)
}

// oneArg parses the flags of a command that takes one positional
// argument, and returns it.
func oneArg(fs *flag.FlagSet, args []string) (string, error) {
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageError(fs)
	}
	return pos[0], nil
}

// noArgs parses the flags of a command that takes no positional argument.
func noArgs(fs *flag.FlagSet, args []string) error {
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError(fs)
	}
	return nil
}

// table starts aligned columns on stdout under a tab-separated header;
// the caller writes rows and flushes.
func table(header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}
