package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// teardownCmd destroys every sandbox of a data dir and unmounts its disk
// pool: for operators retiring a data dir, and for tests.
func teardownCmd(args []string) error {
	fs := flag.NewFlagSet("teardown", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock teardown [--data-dir DIR]\n\nDestroy every sandbox of the data dir (running ones included) and unmount its disk pool.\nRefused while a server runs on it. Records in its database are kept; a server started\nthere later reports the sandboxes as lost.")
		fs.PrintDefaults()
	}
	dir := fs.String("data-dir", defaultStateDir(), "the data dir to tear down")
	fs.StringVar(dir, "state-dir", defaultStateDir(), "alias of --data-dir")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return exitError(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "airlock teardown: unexpected argument %q\n", fs.Arg(0))
		return exitError(2)
	}
	n, err := linux.TeardownStateDir(*dir)
	if err != nil {
		return err
	}
	fmt.Printf("airlock: %s torn down: %d sandbox%s destroyed, nothing mounted\n", *dir, n, plural(n, "es"))
	return nil
}

func plural(n int, suffix string) string {
	if n == 1 {
		return ""
	}
	return suffix
}
