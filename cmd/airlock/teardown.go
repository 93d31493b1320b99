package main

import (
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// teardownCmd destroys every sandbox of a data dir and unmounts its disk
// pool: for operators retiring a data dir, and for tests.
func teardownCmd(args []string) error {
	fs := flag.NewFlagSet("teardown", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock teardown [--data-dir DIR]\n\nDestroy every sandbox of the data dir (running ones included) and unmount its disk pool.\nRefused while a server runs on it. Records in its database are kept; a server started\nthere later reports the sandboxes as lost.")
		printFlags(fs)
	}
	dir := dataDirFlag(fs, defaultDataDir(), "the data dir to tear down ($AIRLOCK_DATA_DIR)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput("teardown", "unexpected argument %q", fs.Arg(0))
	}
	n, err := linux.TeardownStateDir(*dir)
	if err != nil {
		return err
	}
	fmt.Printf("airlock: %s torn down: %s destroyed, nothing mounted\n", *dir, plural(int64(n), "sandbox"))
	return nil
}
